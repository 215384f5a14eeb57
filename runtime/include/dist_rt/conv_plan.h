//===- conv_plan.h - Work of the direct convolution kernels -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// How the runtime's AVX-512 direct convolution (lib/conv.cpp) splits a call
// into tiles, and how much work each tile does. Header-only C++17 with no
// dependencies: conv.cpp picks its forward kernel with forwardPlan, and the
// compiler's cost model (lib/Transforms/LayerCosts.cpp) counts the same
// tiles to price a convolution at the rates `dist-calibrate` measured on
// these kernels (direct_conv_tap, direct_conv_narrow_tap, direct_conv_tile).
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_CONV_PLAN_H
#define DIST_RT_CONV_PLAN_H

#include <algorithm>
#include <cstdint>

namespace dist_rt::conv_plan {

/// Number of filter-vectorised 16 x 16 tiles (16 filters by P columns of
/// 16 / P rows) a forward call needs, with P in `p`, or -1 when they do not
/// apply (outputs narrower than 4 columns or shorter than 16 / P rows).
inline int64_t filterTiles(int64_t n, int64_t f, int64_t oh, int64_t ow,
                           int &p) {
  p = ow >= 16 ? 16 : ow >= 8 ? 8 : ow >= 4 ? 4 : 0;
  if (!p || oh < 16 / p)
    return -1;
  return n * ((f + 15) / 16) * ((oh + 16 / p - 1) / (16 / p)) *
         ((ow + p - 1) / p);
}

/// The position-vectorised tile shape for `positions` output positions per
/// image and `f` filters (per group, of `groups`): sets `fb` (filters per
/// tile) and `v` (vectors of 16 positions), returns the estimated cost per
/// tap in the units of filterTiles * 16.
inline int64_t positionCost(int64_t n, int64_t f, int64_t positions, int &fb,
                            int &v, int64_t groups = 1) {
  // The fewest estimated cycles over filter blocks of 4 or 8 (or 1, for
  // fewer than 4 filters a group: a depthwise convolution) and 1 to
  // min(6, 24 / FB) vectors, counting per tap and tile the larger of the
  // FB * V multiply-adds and twice the V loads and FB broadcasts (half a
  // cycle each). Measured on the benchmark CNN's layers: wide tiles win
  // even when they waste a vector of positions.
  int64_t vectors = (positions + 15) / 16;
  int64_t best = -1;
  fb = 8;
  v = 1;
  for (int b : {8, 4, 1}) {
    if (b == 1 && f >= 4)
      continue;
    int64_t blocks = (f + b - 1) / b;
    for (int w = 1; w <= std::min(6, 24 / b); ++w) {
      int64_t cost = n * groups * blocks * ((vectors + w - 1) / w) *
                     std::max(b * w, 2 * (b + w));
      if (best < 0 || cost < best || (cost == best && b * w > fb * v)) {
        best = cost;
        fb = b;
        v = w;
      }
    }
  }
  return best;
}

/// The forward kernel a call runs and its work.
struct ForwardPlan {
  /// Filter-vectorised (else position-vectorised).
  bool filters = false;
  /// Filter-vectorised: P; position-vectorised: FB and V.
  int p = 0, fb = 0, v = 0;
  /// Positions p = oh * pitch + ow up to the last kept one, over the row
  /// pitch `pitch` (the input's; of the phase planes for strides above 1).
  int64_t positions = 0, pitch = 0, phaseRows = 0;
  /// Items dist_rt_parallel_for spreads over the threads (tiles).
  int64_t items = 0;
  /// Work in 16 x 16 tile-taps: a filter-vectorised tile does 16 fused
  /// multiply-adds of 16 lanes per tap; position-vectorised tiles count
  /// their estimated cost per tap over 16 (strided ones a tenth more, for
  /// the copy into phase planes).
  double tileTaps = 0;
};

/// The kernel the runtime picks for an n x c x h x w input (padded, row
/// pitch `rowPitch`), f filters of kh x kw, strides sh x sw, giving oh x
/// ow outputs; `force` is 0 (estimate), 1 (filter-vectorised where it
/// applies) or 2 (position-vectorised). With `groups`, c and f count one
/// group's channels and filters, and only position-vectorised tiles apply.
inline ForwardPlan forwardPlan(int64_t n, int64_t c, int64_t h, int64_t w,
                               int64_t f, int64_t kh, int64_t kw, int64_t sh,
                               int64_t sw, int64_t oh, int64_t ow,
                               int64_t rowPitch, int force = 0,
                               int64_t groups = 1) {
  ForwardPlan pl;
  bool unit = sh == 1 && sw == 1;
  pl.phaseRows = unit ? h : (h + sh - 1) / sh;
  pl.pitch = unit ? rowPitch : (w + sw - 1) / sw;
  pl.positions = (oh - 1) * pl.pitch + ow;
  int64_t positionUnits = positionCost(n, f, pl.positions, pl.fb, pl.v, groups);
  // The filter-vectorised tiles waste no lanes on the columns between
  // output rows (2 of 18 for a padded 16x16 image, 2 of 10 for 8x8) nor
  // copy strided inputs into phase planes, but waste lanes when the filters
  // are not a multiple of 16: the cheaper of the two by the same estimate
  // (16 x 16 tiles: 16 multiply-adds per 1 load and 16 broadcasts), the
  // phase copy counted as a tenth more.
  int64_t tiles = groups == 1 ? filterTiles(n, f, oh, ow, pl.p) : -1;
  if (!unit)
    positionUnits += positionUnits / 10;
  pl.filters = tiles > 0 && tiles * 16 <= positionUnits;
  if (force == 2)
    pl.filters = false;
  else if (force == 1)
    pl.filters = tiles > 0;
  int64_t k = c * kh * kw;
  if (pl.filters) {
    pl.items = tiles;
    pl.tileTaps = static_cast<double>(tiles) * static_cast<double>(k);
  } else {
    int64_t chunks = ((pl.positions + 15) / 16 + pl.v - 1) / pl.v;
    pl.items = n * groups * ((f + pl.fb - 1) / pl.fb) * chunks;
    pl.tileTaps = static_cast<double>(positionUnits) / 16.0 * k;
  }
  return pl;
}

/// A position-vectorised tile: its image, group, filter block and chunk of
/// 16 * V positions.
struct TileIndex {
  int64_t image, group, block, chunk;
};

/// The tile numbered `item` when an image's tiles run panel by panel (a
/// panel: `panelChunks` consecutive chunks, the last panel of an image
/// possibly narrower), every filter block of a panel before the next
/// panel, images and groups outermost. With panelChunks = chunks this is
/// (image, group, block, chunk) order.
inline TileIndex panelTile(int64_t item, int64_t groups, int64_t blocks,
                           int64_t chunks, int64_t panelChunks) {
  TileIndex t;
  int64_t perImage = blocks * chunks;
  int64_t i = item % perImage, rest = item / perImage;
  t.group = rest % groups;
  t.image = rest / groups;
  int64_t panelItems = blocks * panelChunks;
  int64_t fullPanels = chunks / panelChunks;
  int64_t panel = i / panelItems, width = panelChunks;
  int64_t j = i % panelItems;
  if (panel >= fullPanels) {
    panel = fullPanels;
    j = i - fullPanels * panelItems;
    width = chunks - fullPanels * panelChunks;
  }
  t.block = j / width;
  t.chunk = panel * panelChunks + j % width;
  return t;
}

/// Chunks of `chunkPositions` positions per panel so that a panel's input,
/// `channels` x `planes` planes of (its positions + `reach`) floats, stays
/// within `budgetFloats`: at least 1, at most `chunks`.
inline int64_t panelChunks(int64_t budgetFloats, int64_t channels,
                           int64_t planes, int64_t reach,
                           int64_t chunkPositions, int64_t chunks) {
  int64_t perPlane = budgetFloats / std::max<int64_t>(1, channels * planes);
  int64_t fit = (perPlane - reach) / std::max<int64_t>(1, chunkPositions);
  return std::clamp<int64_t>(fit, 1, std::max<int64_t>(1, chunks));
}

/// How much longer `items` equal items take on `threads` threads than
/// their share (dist_rt_parallel_for gives each of min(items, threads)
/// threads a contiguous run, the longest ceil(items / threads)).
inline double imbalance(int64_t items, int64_t threads) {
  if (items <= 0 || threads <= 1)
    return 1.0;
  int64_t t = std::min(items, threads);
  return static_cast<double>((items + t - 1) / t) *
         static_cast<double>(threads) / static_cast<double>(items);
}

} // namespace dist_rt::conv_plan

#endif // DIST_RT_CONV_PLAN_H
