//===- conv.cpp - Direct 2-D convolution on AVX-512 and AVX2 ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_conv2d_f32, an NCHW convolution of an already padded
// input computed directly, without the im2col columns that the GEMM route
// materialises, its grouped form dist_rt_conv2d_group_f32 (depthwise
// included) and the weight gradient dist_rt_conv2d_wgrad_f32.
//
// Why not im2col + OpenBLAS: on the CPU benchmark's residual CNN (3x3
// convolutions with 3 to 32 channels on 32x32 to 8x8 images, batch 8) the
// products ran at OpenBLAS's speed, but writing the columns (nine times the
// input) took 26% of the inference and the bias and ReLU passes another 8%
// (perf, one thread), which left the model at 0.40 ms against
// onnxruntime's 0.29. oneDNN's convolution wants its blocked layouts (and
// reorders around every layer) to be fast; onnxruntime's MLAS is not
// packaged by Debian.
//
// Two AVX-512 kernels, both register-tiled over all C*KH*KW taps with the
// bias, the old output (when accumulating) and ReLU applied as the tile is
// stored:
//
// - Filter-vectorised (the usual choice): a tile is 16 filters (one
//   vector) by 16 output positions, 16 / P rows of P = 16, 8 or 4 columns.
//   Per tap it loads the 16 packed weights once and multiplies them by each
//   position's input element, broadcast from memory: 16 fused multiply-adds
//   per vector load, no lane wasted when the filters are a multiple of 16,
//   and any column stride (it only changes the broadcast addresses). The
//   tile is transposed in registers (filters by positions) and stored row
//   by row. Edge tiles are shifted back inside the output and store only
//   what the previous tile did not.
// - Position-vectorised, where it is estimated cheaper (fewer than 16
//   filters, or outputs narrower than 4 columns): with unit strides, output row
//   oh reads input rows oh + kh*dh at columns ow + kw*dw, so laid out "wide",
//   with positions p = oh * pitch + ow over the input's row pitch, the input
//   element that position p needs for tap (c, kh, kw) is x[tap offset + p]: a
//   vector of 16 positions is one unaligned load. A tile is FB = 4 or 8 filters
//   by V vectors of positions; per tap V loads and FB broadcasts feed FB * V
//   multiply-adds. Positions past a row's last column are computed and
//   dropped (kept lanes are compressed, then stored). Strides above 1 first
//   split each input plane into sh * sw phase planes (rows i*sh + ph,
//   columns j*sw + pw), after which every tap reads one phase plane with
//   unit stride.
//
// The weight gradient (dist_rt_conv2d_wgrad_f32) is filter-vectorised the
// same way, the roles of taps and positions swapped: a tile is 16 filters
// by up to 24 taps, whose accumulators sum, over every image and output
// position, dy's 16 filters there (dy transposed once per call, 16 x 16
// blocks through the registers) times the tap's input element broadcast.
// On the benchmark CNN's training step (one thread) it took the step from
// 2.13-2.15 ms to 1.70-1.90 ms against im2col columns plus OpenBLAS.
//
// The choice between the two forward kernels is an estimate of each one's
// cycles (see convAvx512). Measured on this project's machine (AMD EPYC,
// AVX-512), one thread, the benchmark CNN's six convolutions (best of 7 x
// 200 calls):
// im2col + OpenBLAS 0.33 ms in the model's profile, position-vectorised
// 0.31 ms, filter-vectorised 0.25 ms (the 3x3 ones on 16 channels at 165 to
// 180 GFLOP/s; the machine's FMA peak measured 175 to 230 GFLOP/s).
//
// Grouped convolutions (dist_rt_conv2d_group_f32) run the
// position-vectorised tiles per group, blocks of 4 or 8 filters within a
// group: RegNetY-400MF's 8-channel groups at 44 to 96 GFLOP/s on one thread
// (Intel Xeon, family 6 model 207), where generated loops ran them at 2 to
// 7 and oneDNN's grouped primitive on NHWC at 50 to 70 (oneDNN 2.6 on NCHW:
// 4 to 13, its blocked layouts refuse 8-channel groups). Depthwise ones (one
// input channel a group) run by output rows instead, four vectors of 16
// columns at a time: MobileNetV2's 3x3 layers at 10 to 35 GFLOP/s, oneDNN's
// NHWC depthwise kernel 14 to 74 (planes of 7x7 and 14x14 are where it
// leads: a plane's rows fill few lanes). Planes whose rows are narrow run
// their vectors across rows instead (see DwPlan::wide): 960 planes of 7x7
// went from 84 to 62 us.
//
// Machines without AVX-512 run depthwise calls on AVX2 where they have it
// (see "Depthwise convolution on AVX2" below) and everything else as
// products by panels of output positions (see "Convolution as products by
// panels"; the compiler emits one-group and grouped calls only for a
// target with AVX-512F, depthwise ones larger than 3x3 for one with AVX2
// and FMA too, unless `dist-opt --conv=direct` asks for them).
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "profile.h"
#include "simd_activation.h"

#include "dist_rt/conv_plan.h"
#include "dist_rt/kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12's unpack and shuffle intrinsics start from _mm512_undefined_ps,
// which -Wuninitialized flags in every caller (a known false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define DIST_RT_CONV_AVX512 1
#else
#define DIST_RT_CONV_AVX512 0
#endif

namespace {

/// Set by tests to pick a kernel (dist_rt::ConvKernel).
std::atomic<int> forcedKernel{0};
/// Set by tests to fix the input bytes of a panel (see panelBytes); 0: the
/// host's.
std::atomic<size_t> forcedPanelBytes{0};

/// Input bytes one panel of position-vectorised tiles may read (see
/// Plan::panelChunks): half the core's L2 cache as the C library reads it
/// (cpuid), 256 KiB where it says nothing.
[[maybe_unused]] size_t panelBytes() {
  if (size_t forced = forcedPanelBytes.load(std::memory_order_relaxed))
    return forced;
  static const size_t host = [] {
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 >= 64 * 1024 ? size_t(l2) / 2 : size_t(256) * 1024;
  }();
  return host;
}

/// A convolution call's geometry and operand strides (elements). With
/// groups, `c` and `f` count the channels and filters of one group.
struct Geometry {
  int64_t n, c, h, w, f, kh, kw, sh, sw, dh, dw, oh, ow;
  int64_t groups = 1;
  /// Input strides of images, groups, channels and rows (columns: 1).
  int64_t inN, inG = 0, inC, inH;
  /// Output strides of images, groups, filters and rows (columns: 1).
  int64_t outN, outG = 0, outF, outH;
  bool accumulate, relu;
  /// DIST_RT_CONV_CLIP: v < lo becomes lo, then v > hi becomes hi.
  bool clip = false;
  float lo = 0.0f, hi = 0.0f;
  /// DIST_RT_CONV_SILU: v * (1 / (1 + exp(-v))), DIST_RT_CONV_HARDSWISH:
  /// v * max(0, min(1, v / 6 + 1 / 2)), before the ReLU and Clip.
  dist_rt::Gate gate = dist_rt::Gate::None;
};

/// The activation the call asks for, on one output value: ReLU (lanes <= 0,
/// -0 included, become +0; NaN kept), then the clip (NaN kept), as the
/// generated elementwise ops the compiler folded into the call compute them.
inline float activate(const Geometry &g, float v) {
  return dist_rt::reluClip1(v, g.relu, g.clip, g.lo, g.hi, g.gate);
}

/// out[n, g, f, oh, ow] (+)= bias[g, f] + sum over c, kh, kw of
/// wt[g, f, c, kh, kw] * in[n, g, c, oh*sh + kh*dh, ow*sw + kw*dw], then
/// ReLU.
void convPlain(const Geometry &g, const float *in, const float *wt,
               const float *bias, float *out, int64_t begin, int64_t end) {
  for (int64_t item = begin; item < end; ++item) {
    int64_t b = item / (g.groups * g.f), gf = item % (g.groups * g.f);
    int64_t grp = gf / g.f, f = gf % g.f;
    const float *x = in + b * g.inN + grp * g.inG;
    float *o = out + b * g.outN + grp * g.outG + f * g.outF;
    for (int64_t y = 0; y < g.oh; ++y)
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        float acc = 0.0f;
        for (int64_t c = 0; c < g.c; ++c)
          for (int64_t i = 0; i < g.kh; ++i)
            for (int64_t j = 0; j < g.kw; ++j)
              acc += wt[((gf * g.c + c) * g.kh + i) * g.kw + j] *
                     x[c * g.inC + (y * g.sh + i * g.dh) * g.inH + xo * g.sw +
                       j * g.dw];
        float &dst = o[y * g.outH + xo];
        float v = g.accumulate ? dst : 0.0f;
        v += acc;
        if (bias)
          v += bias[gf];
        dst = activate(g, v);
      }
  }
}

struct PlainCtx {
  const Geometry *g;
  const float *in, *wt, *bias;
  float *out;
};

void plainChunk(void *ctx, int64_t begin, int64_t end) {
  auto *p = static_cast<PlainCtx *>(ctx);
  convPlain(*p->g, p->in, p->wt, p->bias, p->out, begin, end);
}

/// dw[o, ci, i, j] (+)= sum over b, y, x of dy[b, o, y, x] *
/// in[b, ci, y*sh + i*dh, x*sw + j*dw], as a plain loop.
void gradPlain(const Geometry &g, const float *in, const float *dy, float *dw,
               int64_t begin, int64_t end) {
  int64_t k = g.c * g.kh * g.kw;
  for (int64_t item = begin; item < end; ++item) {
    int64_t f = item / k, t = item % k;
    int64_t c = t / (g.kh * g.kw), i = t / g.kw % g.kh, j = t % g.kw;
    float acc = 0.0f;
    for (int64_t b = 0; b < g.n; ++b)
      for (int64_t y = 0; y < g.oh; ++y)
        for (int64_t x = 0; x < g.ow; ++x)
          acc += dy[b * g.outN + f * g.outF + y * g.outH + x] *
                 in[b * g.inN + c * g.inC + (y * g.sh + i * g.dh) * g.inH +
                    x * g.sw + j * g.dw];
    dw[item] = g.accumulate ? dw[item] + acc : acc;
  }
}

struct GradPlainCtx {
  const Geometry *g;
  const float *in, *dy;
  float *dw;
};

void gradPlainChunk(void *ctx, int64_t begin, int64_t end) {
  auto *p = static_cast<GradPlainCtx *>(ctx);
  gradPlain(*p->g, p->in, p->dy, p->dw, begin, end);
}

#if DIST_RT_CONV_AVX512

/// Everything the tiles of one call share.
struct Plan {
  Geometry g;
  /// Phase planes: X[((b*C + c)*sh + ph)*sw + pw][i][j], hq x wq each;
  /// for unit strides the input itself, whose row stride is then wq.
  const float *x;
  int64_t hq, wq, imageStride;
  /// Tap offsets into an image's planes, k = (c, kh, kw).
  const int64_t *taps;
  int64_t k;
  /// Offset of a group's first channel in an image of `x`.
  int64_t groupStride = 0;
  /// Weights packed per group and filter block:
  /// wp[((grp * filterBlocks + blk) * k + t) * FB + i].
  const float *wp;
  int fb = 0, v = 0;
  int64_t filterBlocks, chunks, positions;
  /// Chunks of 16 * V positions per panel: the tiles of an image and group
  /// run panel by panel, every filter block of a panel before the next
  /// panel, so that the panel's input (all channels at its positions) is
  /// read from memory once and from cache by the other filter blocks. An
  /// image that fits is one panel (filter blocks outermost, as before);
  /// larger ones, such as a U-Net's 64 channels on 128 x 128 (4 MB, sent
  /// here because their im2col columns would pass 12 MiB), would otherwise
  /// stream from memory once per filter block. (Not yet timed against the
  /// old order: written on an AVX2 machine, where these tiles do not run.)
  int64_t panelChunks;
  const float *bias;
  float *out;
};

/// activate() on 16 lanes.
__attribute__((target("avx512f"), always_inline)) inline __m512
activate(const Geometry &g, __m512 r) {
  return dist_rt::reluClip16(r, g.relu, g.clip, g.lo, g.hi, g.gate);
}

/// Lanes of the 16 positions from `p0` whose column is inside the output.
__attribute__((target("avx512f"))) inline __mmask16
keptLanes(int64_t p0, int64_t wq, int64_t ow, int64_t positions) {
  int64_t col = p0 % wq;
  if (col + 16 <= ow && p0 + 16 <= positions)
    return static_cast<__mmask16>(0xffff);
  unsigned mask = 0;
  for (int lane = 0; lane < 16; ++lane) {
    if (p0 + lane < positions && col < ow)
      mask |= 1u << lane;
    if (++col == wq)
      col = 0;
  }
  return static_cast<__mmask16>(mask);
}

/// Stores lanes `kept` of filter `f`'s accumulator `acc` at `dst` (the
/// kept lanes go to consecutive outputs), adding the old output and the
/// bias and applying the activation as the call asks.
__attribute__((target("avx512f"), always_inline)) inline void
storeLanes(const Plan &pl, __m512 acc, __mmask16 kept, float *dst, int64_t f) {
  __mmask16 head = static_cast<__mmask16>((1u << __builtin_popcount(kept)) - 1);
  __m512 r = _mm512_maskz_compress_ps(kept, acc);
  if (pl.g.accumulate)
    r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(head, dst));
  if (pl.bias)
    r = _mm512_add_ps(r, _mm512_set1_ps(pl.bias[f]));
  _mm512_mask_storeu_ps(dst, head, activate(pl.g, r));
}

/// One FB x (16 * V) tile: filters [f0, f0 + FB) of group `grp` of image
/// `b`, positions [p0, p0 + 16 * V).
template <int FB, int V>
__attribute__((target("avx512f"))) void
convTile(const Plan &pl, int64_t b, int64_t grp, int64_t blk, int64_t p0) {
  const Geometry &g = pl.g;
  __m512 acc[FB][V];
#pragma GCC unroll 8
  for (int i = 0; i < FB; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      acc[i][v] = _mm512_setzero_ps();
  // Lanes past the last position are not loaded (they may lie past the
  // input's end).
  __mmask16 load[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    int64_t left = pl.positions - (p0 + 16 * v);
    load[v] = left >= 16  ? static_cast<__mmask16>(0xffff)
              : left <= 0 ? static_cast<__mmask16>(0)
                          : static_cast<__mmask16>((1u << left) - 1);
  }
  const float *x = pl.x + b * pl.imageStride + grp * pl.groupStride + p0;
  const float *w = pl.wp + (grp * pl.filterBlocks + blk) * pl.k * FB;
  // The first block of filters sweeps a panel's input from L3 or memory
  // (the later blocks find it in L2): the lines of every input row the
  // next chunk of positions reads, fetched while this tile computes. Its
  // taps hop across channel planes, more streams than the hardware
  // prefetchers follow: DenseNet-121's 128 -> 32 layers on 56 x 56 ran in
  // 1552-1606 us without, 1130-1163 with (ResNet-50's 64 -> 64: 1191-1219
  // against 1042-1077; the same for every block: 1205-1227; AMD EPYC,
  // family 26, one thread). A kernel row's first tap stands for the row
  // (the others lie within a line of it, or in another phase of a strided
  // layer, not fetched).
  if (blk == 0) {
    const char *next = reinterpret_cast<const char *>(x + 16 * V);
    for (int64_t t = 0; t < pl.k; t += pl.g.kw)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        _mm_prefetch(next + pl.taps[t] * 4 + 64 * v, _MM_HINT_T0);
  }
  for (int64_t t = 0; t < pl.k; ++t) {
    const float *xt = x + pl.taps[t];
    __m512 in[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      in[v] = _mm512_maskz_loadu_ps(load[v], xt + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < FB; ++i) {
      __m512 wv = _mm512_set1_ps(w[t * FB + i]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        acc[i][v] = _mm512_fmadd_ps(wv, in[v], acc[i][v]);
    }
  }
  int64_t f0 = blk * FB;
  // The bias index of filter f0 (bias is [groups, f]).
  int64_t fb0 = grp * g.f + f0;
  float *outImage = pl.out + b * g.outN + grp * g.outG + f0 * g.outF;
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    int64_t p = p0 + 16 * v;
    __mmask16 kept = keptLanes(p, pl.wq, g.ow, pl.positions);
    if (!kept)
      continue;
    int64_t row = p / pl.wq, col = p % pl.wq;
    if (g.outH == g.ow) {
      // Contiguous rows: the kept lanes are consecutive outputs.
      int64_t first = col < g.ow ? row * g.ow + col : (row + 1) * g.ow;
#pragma GCC unroll 8
      for (int i = 0; i < FB; ++i)
        if (f0 + i < g.f)
          storeLanes(pl, acc[i][v], kept, outImage + i * g.outF + first,
                     fb0 + i);
      continue;
    }
    // One store per output row the vector covers.
    int lane = 0;
    while (lane < 16) {
      int inRow = static_cast<int>(std::min<int64_t>(16 - lane, pl.wq - col));
      __mmask16 seg =
          static_cast<__mmask16>(kept & (((1u << inRow) - 1) << lane));
      if (seg) {
#pragma GCC unroll 8
        for (int i = 0; i < FB; ++i)
          if (f0 + i < g.f)
            storeLanes(pl, acc[i][v], seg,
                       outImage + i * g.outF + row * g.outH + col, fb0 + i);
      }
      lane += inRow;
      ++row;
      col = 0;
    }
  }
}

template <int FB, int V>
__attribute__((target("avx512f"))) void tileChunk(void *ctx, int64_t begin,
                                                  int64_t end) {
  const Plan &pl = *static_cast<const Plan *>(ctx);
  for (int64_t item = begin; item < end; ++item) {
    dist_rt::conv_plan::TileIndex t = dist_rt::conv_plan::panelTile(
        item, pl.g.groups, pl.filterBlocks, pl.chunks, pl.panelChunks);
    convTile<FB, V>(pl, t.image, t.group, t.block, t.chunk * 16 * V);
  }
}

using ChunkFn = void (*)(void *, int64_t, int64_t);

template <int FB>
ChunkFn tileFn(int v) {
  switch (v) {
  case 1:
    return tileChunk<FB, 1>;
  case 2:
    return tileChunk<FB, 2>;
  case 3:
    return tileChunk<FB, 3>;
  case 4:
    return tileChunk<FB, 4>;
  case 5:
    return tileChunk<FB, 5>;
  default:
    return tileChunk<FB, 6>;
  }
}

/// Splits one input row of `w` elements into its even and odd columns,
/// o0[j] = s[2j] and o1[j] = s[2j + 1] for j in [0, wq), zeros past the
/// row's end; a null output is skipped.
__attribute__((target("avx512f"))) void
splitRow2(const float *s, int64_t w, int64_t wq, float *o0, float *o1) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12,
                                        10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t j = 0; j < wq; j += 16) {
    int64_t left = w - 2 * j;
    auto lanes = [](int64_t n) {
      return n >= 16  ? static_cast<__mmask16>(0xffff)
             : n <= 0 ? static_cast<__mmask16>(0)
                      : static_cast<__mmask16>((1u << n) - 1);
    };
    __m512 lo = _mm512_maskz_loadu_ps(lanes(left), s + 2 * j);
    __m512 hi = _mm512_maskz_loadu_ps(lanes(left - 16), s + 2 * j + 16);
    __mmask16 out = lanes(wq - j);
    if (o0)
      _mm512_mask_storeu_ps(o0 + j, out, _mm512_permutex2var_ps(lo, even, hi));
    if (o1)
      _mm512_mask_storeu_ps(o1 + j, out, _mm512_permutex2var_ps(lo, odd, hi));
  }
}

/// Copies the padded input into the phase planes that some tap reads, for
/// strides above 1. Planes no tap reads are left unwritten.
struct PhaseCtx {
  const Geometry *g;
  const float *in;
  float *x;
  int64_t hq, wq;
  const char *used;
};

void phaseChunk(void *ctx, int64_t begin, int64_t end) {
  const PhaseCtx &p = *static_cast<const PhaseCtx *>(ctx);
  const Geometry &g = *p.g;
  int64_t plane = p.hq * p.wq;
  int64_t channels = g.groups * g.c;
  for (int64_t bc = begin; bc < end; ++bc) {
    int64_t ch = bc % channels;
    const float *src = p.in + (bc / channels) * g.inN + (ch / g.c) * g.inG +
                       (ch % g.c) * g.inC;
    float *dst = p.x + bc * g.sh * g.sw * plane;
    // Rows of a phase plane past the input's last row are zero.
    for (int64_t ph = 0; ph < g.sh; ++ph) {
      int64_t rows = (g.h - ph + g.sh - 1) / g.sh;
      for (int64_t pw = 0; pw < g.sw; ++pw)
        if (p.used[ph * g.sw + pw])
          std::memset(dst + (ph * g.sw + pw) * plane + rows * p.wq, 0,
                      size_t((p.hq - rows) * p.wq) * sizeof(float));
    }
    for (int64_t y = 0; y < g.h; ++y) {
      int64_t ph = y % g.sh, i = y / g.sh;
      const float *s = src + y * g.inH;
      auto row = [&](int64_t pw) -> float * {
        return p.used[ph * g.sw + pw]
                   ? dst + (ph * g.sw + pw) * plane + i * p.wq
                   : nullptr;
      };
      if (g.sw == 2) {
        float *even = row(0), *odd = row(1);
        if (even || odd)
          splitRow2(s, g.w, p.wq, even, odd);
        continue;
      }
      for (int64_t pw = 0; pw < g.sw; ++pw) {
        float *o = row(pw);
        if (!o)
          continue;
        int64_t cols = (g.w - pw + g.sw - 1) / g.sw;
        for (int64_t j = 0; j < cols; ++j)
          o[j] = s[j * g.sw + pw];
        for (int64_t j = cols; j < p.wq; ++j)
          o[j] = 0.0f;
      }
    }
  }
}

/// Per-thread scratch that survives calls, so a steady state allocates
/// nothing.
template <typename T>
T *scratch(std::vector<T> &buf, size_t size) {
  if (buf.size() < size)
    buf.resize(size);
  return buf.data();
}

/// `buf` grown to `size` floats past a 64-byte boundary; returns that
/// boundary.
float *alignedScratch(std::vector<float> &buf, size_t size) {
  float *p = scratch(buf, size + 16);
  auto addr = reinterpret_cast<uintptr_t>(p);
  return p + ((64 - addr % 64) % 64) / sizeof(float);
}

/// The offsets of every tap k = (c, kh, kw) into an image of the input
/// (unit strides: the input itself), in `buf`.
const int64_t *inputTaps(const Geometry &g, std::vector<int64_t> &buf) {
  int64_t *tp = scratch(buf, size_t(g.c * g.kh * g.kw));
  for (int64_t c = 0, t = 0; c < g.c; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j, ++t)
        tp[t] = c * g.inC + i * g.dh * g.inH + j * g.dw;
  return tp;
}

/// Packs the [f, k] weights by blocks of `block` filters:
/// wp[(blk * k + t) * block + i] = wt[(blk * block + i) * k + t], zeros
/// past the last filter.
void packFilters(const float *wt, int64_t f, int64_t k, int block, float *wp) {
  int64_t blocks = (f + block - 1) / block;
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int i = 0; i < block; ++i) {
      int64_t fi = blk * block + i;
      float *dst = wp + blk * k * block + i;
      if (fi < f) {
        const float *src = wt + fi * k;
        for (int64_t t = 0; t < k; ++t)
          dst[t * block] = src[t];
      } else {
        for (int64_t t = 0; t < k; ++t)
          dst[t * block] = 0.0f;
      }
    }
}

/// packFilters for each of `groups` [f, k] weights one after the other.
void packGroups(const float *wt, int64_t groups, int64_t f, int64_t k,
                int block, float *wp) {
  int64_t packed = (f + block - 1) / block * k * block;
  for (int64_t grp = 0; grp < groups; ++grp)
    packFilters(wt + grp * f * k, f, k, block, wp + grp * packed);
}

/// The packed weights of packGroups for `wt`, 64-byte aligned: derived
/// once per weight and cached when it is constant (an inference's
/// parameter file; packing was 2% of the benchmark CNN's inference at one
/// thread, all of it on the calling thread at two), else packed into
/// `scratch`.
const float *packedFilters(const float *wt, int64_t groups, int64_t f,
                           int64_t k, int block, std::vector<float> &scratch) {
  struct Args {
    const float *wt;
    int64_t groups, f, k;
    int block;
  } args{wt, groups, f, k, block};
  size_t count = size_t(groups * ((f + block - 1) / block) * k * block);
  // The block size (below 256) and the groups share the key's last word.
  const int64_t key[3] = {f, k, groups << 8 | block};
  if (const void *cached = dist_rt::derivedConstant(
          wt, size_t(groups * f * k) * sizeof(float), key,
          count * sizeof(float),
          [](void *dst, const void *ctx) {
            const auto &a = *static_cast<const Args *>(ctx);
            packGroups(a.wt, a.groups, a.f, a.k, a.block,
                       static_cast<float *>(dst));
          },
          &args))
    return static_cast<const float *>(cached);
  float *wp = alignedScratch(scratch, count);
  packGroups(wt, groups, f, k, block, wp);
  return wp;
}

//===----------------------------------------------------------------------===//
// Filter-vectorised tiles
//===----------------------------------------------------------------------===//

/// Everything the filter-vectorised tiles of one call share.
struct ChanPlan {
  Geometry g;
  const float *in;
  /// Tap offsets into an image of the input, k = (c, kh, kw).
  const int64_t *taps;
  int64_t k;
  /// Weights packed per block of 16 filters: wp[(blk * k + t) * 16 + i],
  /// zeros past the last filter.
  const float *wp;
  /// Tiles: R = 16 / P output rows by P columns, starting at row
  /// min(tr * R, oh - R) and column min(tc * P, ow - P) (the last ones are
  /// shifted back and store only what earlier tiles did not).
  int64_t rowTiles, colTiles, blocks;
  const float *bias;
  float *out;
};

/// In-register transpose of 16 vectors of 16 floats: r[i] lane j becomes
/// r[j] lane i.
__attribute__((target("avx512f"), always_inline)) inline void
transpose16(__m512 (&r)[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  // u[4q + j] holds, in each 128-bit lane l, element j of rows 4q..4q+3
  // at columns 4l..4l+3.
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      t[8 * h + j] = _mm512_shuffle_f32x4(u[8 * h + j], u[8 * h + 4 + j], 0x88);
      t[8 * h + 4 + j] =
          _mm512_shuffle_f32x4(u[8 * h + j], u[8 * h + 4 + j], 0xDD);
    }
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
  }
}

/// One tile of 16 filters (block `blk`) by 16 output positions of image
/// `b`: R = 16 / P rows of P columns from (oh0, ow0), column stride S (the
/// convolution's; 0 for another stride, read from the plan). `keep` masks
/// the positions (r * P + j) this tile stores.
template <int P, int S>
__attribute__((target("avx512f"))) void chanTile(const ChanPlan &pl, int64_t b,
                                                 int64_t blk, int64_t oh0,
                                                 int64_t ow0, __mmask16 keep) {
  constexpr int R = 16 / P;
  const Geometry &g = pl.g;
  const int64_t sw = S ? S : g.sw;
  __m512 acc[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    acc[i] = _mm512_setzero_ps();
  const float *x = pl.in + b * g.inN + oh0 * g.sh * g.inH + ow0 * sw;
  const int64_t rowStep = g.sh * g.inH;
  const float *w = pl.wp + blk * pl.k * 16;
  for (int64_t t = 0; t < pl.k; ++t) {
    __m512 wv = _mm512_load_ps(w + t * 16);
    const float *xt = x + pl.taps[t];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int j = 0; j < P; ++j)
        acc[r * P + j] = _mm512_fmadd_ps(
            _mm512_set1_ps(xt[r * rowStep + j * sw]), wv, acc[r * P + j]);
  }
  transpose16(acc);
  // acc[i]: filter blk * 16 + i at the 16 positions.
  int64_t f0 = blk * 16;
  int64_t filters = std::min<int64_t>(16, g.f - f0);
  float *o = pl.out + b * g.outN + f0 * g.outF + oh0 * g.outH + ow0;
  __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    if (i >= filters)
      break;
    float *of = o + i * g.outF;
    __m512 r = acc[i];
    if (g.accumulate) {
      __m512 old = zero;
#pragma GCC unroll 4
      for (int rr = 0; rr < R; ++rr) {
        __mmask16 m =
            static_cast<__mmask16>(keep & (((1u << P) - 1) << (rr * P)));
        old = _mm512_mask_loadu_ps(old, m, of + rr * g.outH - rr * P);
      }
      r = _mm512_add_ps(r, old);
    }
    if (pl.bias)
      r = _mm512_add_ps(r, _mm512_set1_ps(pl.bias[f0 + i]));
    r = activate(g, r);
#pragma GCC unroll 4
    for (int rr = 0; rr < R; ++rr) {
      __mmask16 m =
          static_cast<__mmask16>(keep & (((1u << P) - 1) << (rr * P)));
      _mm512_mask_storeu_ps(of + rr * g.outH - rr * P, m, r);
    }
  }
}

/// Runs tiles [begin, end), numbered (b, blk, row tile, column tile).
template <int P, int S>
__attribute__((target("avx512f"))) void chanChunk(void *ctx, int64_t begin,
                                                  int64_t end) {
  const ChanPlan &pl = *static_cast<const ChanPlan *>(ctx);
  const Geometry &g = pl.g;
  constexpr int R = 16 / P;
  for (int64_t item = begin; item < end; ++item) {
    int64_t tc = item % pl.colTiles;
    int64_t rest = item / pl.colTiles;
    int64_t tr = rest % pl.rowTiles;
    rest /= pl.rowTiles;
    int64_t blk = rest % pl.blocks, b = rest / pl.blocks;
    // Shifted-back last tiles store only the positions past the previous
    // tile's.
    int64_t oh0 = std::min<int64_t>(tr * R, g.oh - R);
    int64_t ow0 = std::min<int64_t>(tc * P, g.ow - P);
    int64_t skipRows = tr * R - oh0, skipCols = tc * P - ow0;
    unsigned rowMask = ((1u << P) - 1) & ~((1u << skipCols) - 1);
    unsigned keep = 0;
    for (int r = static_cast<int>(skipRows); r < R; ++r)
      keep |= rowMask << (r * P);
    chanTile<P, S>(pl, b, blk, oh0, ow0, static_cast<__mmask16>(keep));
  }
}

template <int P>
ChunkFn chanFn(int64_t sw) {
  return sw == 1   ? chanChunk<P, 1>
         : sw == 2 ? chanChunk<P, 2>
                   : chanChunk<P, 0>;
}

void convChannels(const Geometry &g, const float *in, const float *wt,
                  const float *bias, float *out, int p) {
  thread_local std::vector<float> packed;
  thread_local std::vector<int64_t> taps;
  ChanPlan pl;
  pl.g = g;
  pl.in = in;
  pl.bias = bias;
  pl.out = out;
  pl.k = g.c * g.kh * g.kw;
  pl.taps = inputTaps(g, taps);
  pl.blocks = (g.f + 15) / 16;
  // 64-byte aligned rows of 16 weights.
  pl.wp = packedFilters(wt, 1, g.f, pl.k, 16, packed);
  int r = 16 / p;
  pl.rowTiles = (g.oh + r - 1) / r;
  pl.colTiles = (g.ow + p - 1) / p;
  ChunkFn fn = p == 16  ? chanFn<16>(g.sw)
               : p == 8 ? chanFn<8>(g.sw)
                        : chanFn<4>(g.sw);
  dist_rt_parallel_for(g.n * pl.blocks * pl.rowTiles * pl.colTiles, fn, &pl);
}

//===----------------------------------------------------------------------===//
// Depthwise rows
//===----------------------------------------------------------------------===//

/// A convolution with one input channel a group (depthwise, with any
/// number of filters per group), by output rows: per vector of 16 output
/// columns, one load and one multiply-add per tap, the kernel's weights
/// broadcast. The position-vectorised tiles ran MobileNetV2's depthwise
/// layers at 4 to 11 GFLOP/s here (their per-vector lane bookkeeping and
/// stores spread over only the 9 taps of one filter); these rows run them
/// at the speed of the loads.
struct DwPlan {
  const Geometry *g;
  const float *in, *wt, *bias;
  float *out;
  /// Unit column strides with rows narrower than they are apart: vectors
  /// of 16 positions p = y * in_sh + x run across rows (the input at p plus
  /// a tap's offset), so a 7x7 plane takes 4 vectors instead of 7; the
  /// lanes of each output row are stored with a mask.
  bool wide = false;
};

/// Whether a unit-stride depthwise plane needs fewer vectors wide than by
/// rows.
bool dwWide(const Geometry &g) {
  if (g.sw != 1 || g.sh != 1)
    return false;
  int64_t positions = (g.oh - 1) * g.inH + g.ow;
  return (positions + 15) / 16 < g.oh * ((g.ow + 15) / 16);
}

__attribute__((target("avx512f"), always_inline)) inline __mmask16
firstLanes(int64_t n) {
  return n >= 16  ? static_cast<__mmask16>(0xffff)
         : n <= 0 ? static_cast<__mmask16>(0)
                  : static_cast<__mmask16>((1u << n) - 1);
}

/// Stores lanes `mask` of `r` at `at` (lane i to at[i]), the old output
/// added when accumulating, then the bias and the activation as asked.
__attribute__((target("avx512f"), always_inline)) inline void
dwStore(const Geometry &g, __m512 r, float *at, __mmask16 mask, __m512 bias) {
  if (g.accumulate)
    r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask, at));
  r = _mm512_add_ps(r, bias);
  _mm512_mask_storeu_ps(at, mask, activate(g, r));
}

/// Planes [begin, end) (image, group, filter) with column stride SW (1 or
/// 2) and, when KH and KW are not 0, that kernel size. A plane's vectors
/// of 16 output columns, row after row, go four at a time: four
/// independent multiply-add chains (one chain per vector left the kernel
/// waiting on the multiply-add latency: 2.5x slower on 112x112 planes).
template <int SW, int KH, int KW>
__attribute__((target("avx512f"))) void dwChunk(void *ctx, int64_t begin,
                                                int64_t end) {
  constexpr int V = 4;
  const DwPlan &pl = *static_cast<const DwPlan *>(ctx);
  const Geometry g = *pl.g;
  const int64_t kh = KH ? KH : g.kh, kw = KW ? KW : g.kw;
  const int64_t rowStep = g.sh * g.inH, tapRow = g.dh * g.inH, dw = g.dw;
  const bool wide = SW == 1 && pl.wide;
  const int64_t positions = (g.oh - 1) * g.inH + g.ow;
  const int64_t perRow = (g.ow + 15) / 16;
  const int64_t vectors = wide ? (positions + 15) / 16 : g.oh * perRow;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12,
                                        10, 8, 6, 4, 2, 0);
  int64_t planes = g.groups * g.f;
  for (int64_t item = begin; item < end; ++item) {
    int64_t b = item / planes, gf = item % planes, grp = gf / g.f;
    const float *x = pl.in + b * g.inN + grp * g.inG;
    float *o = pl.out + b * g.outN + grp * g.outG + gf % g.f * g.outF;
    const float *w = pl.wt + gf * kh * kw;
    __m512 bias = _mm512_set1_ps(pl.bias ? pl.bias[gf] : 0.0f);
    for (int64_t v0 = 0; v0 < vectors; v0 += V) {
      const float *src[V];
      float *dst[V];
      __mmask16 keep[V], lo[V], hi[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        if (wide) {
          int64_t p = (v0 + v) * 16;
          keep[v] = firstLanes(positions - p);
          lo[v] = hi[v] = 0;
          src[v] = x + std::min(p, positions - 1);
          dst[v] = nullptr;
          continue;
        }
        int64_t at = std::min(v0 + v, vectors - 1);
        int64_t y = at / perRow, x0 = at % perRow * 16;
        int64_t n = v0 + v < vectors ? std::min<int64_t>(16, g.ow - x0) : 0;
        keep[v] = firstLanes(n);
        // Input columns the kept lanes read from a tap's first one.
        lo[v] = firstLanes(n ? SW * (n - 1) + 1 : 0);
        hi[v] = firstLanes(n ? SW * (n - 1) + 1 - 16 : 0);
        src[v] = x + y * rowStep + x0 * SW;
        dst[v] = o + y * g.outH + x0;
      }
      __m512 acc[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v)
        acc[v] = _mm512_setzero_ps();
      for (int64_t i = 0; i < kh; ++i) {
#pragma GCC unroll 8
        for (int64_t j = 0; j < kw; ++j) {
          __m512 wv = _mm512_set1_ps(w[i * kw + j]);
          int64_t off = i * tapRow + j * dw;
#pragma GCC unroll 4
          for (int v = 0; v < V; ++v) {
            __m512 in;
            if (SW == 1)
              in = _mm512_maskz_loadu_ps(keep[v], src[v] + off);
            else
              in = _mm512_permutex2var_ps(
                  _mm512_maskz_loadu_ps(lo[v], src[v] + off), even,
                  _mm512_maskz_loadu_ps(hi[v], src[v] + off + 16));
            acc[v] = _mm512_fmadd_ps(wv, in, acc[v]);
          }
        }
      }
      for (int v = 0; v < V; ++v) {
        if (!wide) {
          dwStore(g, acc[v], dst[v], keep[v], bias);
          continue;
        }
        // One masked store per output row the vector covers, its base
        // shifted back by the row's first lane (masked-off lanes are not
        // accessed).
        int64_t p0 = (v0 + v) * 16;
        int64_t y = p0 / g.inH, col = p0 - y * g.inH;
        int64_t lanes = std::min<int64_t>(16, positions - p0);
        for (int64_t lane = 0; lane < lanes; ++y, col = 0) {
          int64_t seg = std::min(lanes - lane, g.inH - col);
          int64_t valid = std::min(seg, std::max<int64_t>(0, g.ow - col));
          if (valid > 0)
            dwStore(g, acc[v], o + y * g.outH + col - lane,
                    static_cast<__mmask16>(((1u << valid) - 1) << lane), bias);
          lane += seg;
        }
      }
    }
  }
}

/// Planes [begin, end) (image, group, filter) of a depthwise K x K
/// convolution with strides S (1 or 2) and unit dilations, by blocks of R
/// output rows by C vectors of 16 columns: output row r reads input rows
/// S * r + ky, output column x input column S * x + kx. Each input row's
/// vectors are loaded once for the block and feed every output row that
/// reads them (up to K at S = 1, 2 at S = 2), with the plane's K x K
/// weights in registers and R x C independent multiply-add chains; at S =
/// 2 the pairs of vectors at column offsets 0, 2, 4 are split into their
/// even and odd columns (taps kx and kx + 1). dwChunk loads every tap of
/// every output row (a pair and a split per tap at S = 2) and works out
/// each vector's place and masks: MobileNetV2's 3x3 layers ran there at
/// 22-33 GFLOP/s (7-18 at S = 2) with the planes in L2.
template <int S, int K, int R, int C>
__attribute__((target("avx512f"))) void dwRowsChunk(void *ctx, int64_t begin,
                                                    int64_t end) {
  static_assert(S == 1 || S == 2, "strides of 1 or 2");
  const DwPlan &pl = *static_cast<const DwPlan *>(ctx);
  const Geometry g = *pl.g;
  const int64_t inH = g.inH;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12,
                                        10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13,
                                       11, 9, 7, 5, 3, 1);
  // Loads of one input row per vector: K shifted ones, or at S = 2 the
  // pairs at column offsets 0, 2, ... (q = 0 .. kLoads - 1).
  constexpr int kLoads = S == 1 ? K : (K + 1) / 2;
  int64_t planes = g.groups * g.f;
  for (int64_t item = begin; item < end; ++item) {
    int64_t b = item / planes, gf = item % planes, grp = gf / g.f;
    const float *x = pl.in + b * g.inN + grp * g.inG;
    float *o = pl.out + b * g.outN + grp * g.outG + gf % g.f * g.outF;
    const float *wp = pl.wt + gf * K * K;
    __m512 w[K * K];
#pragma GCC unroll 25
    for (int t = 0; t < K * K; ++t)
      w[t] = _mm512_set1_ps(wp[t]);
    __m512 bias = _mm512_set1_ps(pl.bias ? pl.bias[gf] : 0.0f);
    for (int64_t x0 = 0; x0 < g.ow; x0 += 16 * C) {
      // Per vector: its kept lanes and, at S = 2, the input columns each
      // pair reads (its even lanes, and its odd ones where tap 2q + 1
      // exists).
      __mmask16 keep[C], lo[C][kLoads], hi[C][kLoads];
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        int64_t n = std::clamp<int64_t>(g.ow - x0 - 16 * c, 0, 16);
        keep[c] = firstLanes(n);
#pragma GCC unroll 5
        for (int q = 0; q < kLoads; ++q) {
          int64_t cols = n ? 2 * (n - 1) + (2 * q + 1 < K ? 2 : 1) : 0;
          lo[c][q] = S == 1 ? keep[c] : firstLanes(cols);
          hi[c][q] = S == 1 ? 0 : firstLanes(cols - 16);
        }
      }
      for (int64_t y0 = 0; y0 < g.oh; y0 += R) {
        int64_t rows = std::min<int64_t>(R, g.oh - y0);
        const float *src = x + S * (y0 * inH + x0);
        // The input rows the next block reads first, fetched while this
        // one computes: the planes come from L3 or memory (the layer before
        // wrote them, larger than L2), and the hardware prefetchers do not
        // follow reads of a few lines per row a row apart. MobileNetV2's
        // 96 x 113 x 113 layer at stride 2 ran in 476-489 us in the model
        // without, 286-294 with (one block ahead; two or three: 291-310;
        // AMD EPYC, family 26, one thread). Past the plane's last rows they
        // are the next plane's first ones where planes follow each other
        // (prefetches never fault): MobileNetV2 at batch 8, whose small
        // planes are a block or two each, ran its 384 x 14 x 14 layers in
        // 470-486 us stopping at the plane's end, 272-275 going on, and the
        // model in 48.9-49.0 ms against 45.9-46.9.
        for (int64_t r = S * (R - 1) + K; r < S * (R - 1) + K + S * R; ++r) {
          const char *row = reinterpret_cast<const char *>(src + r * inH);
          for (int64_t byte = 0; byte < (16 * S * C + K) * 4; byte += 64)
            _mm_prefetch(row + byte, _MM_HINT_T0);
        }
        __m512 acc[R][C];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int c = 0; c < C; ++c)
            acc[r][c] = _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int ir = 0; ir < S * (R - 1) + K; ++ir) {
          if (ir >= S * (rows - 1) + K)
            break;
#pragma GCC unroll 5
          for (int q = 0; q < kLoads; ++q)
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) {
              // The input vectors of taps kx = q (S = 1) or 2q and 2q + 1.
              const float *at = src + ir * inH + 16 * S * c + S * q;
              __m512 tap[2];
              if (S == 1) {
                tap[0] = _mm512_maskz_loadu_ps(lo[c][q], at);
              } else {
                __m512 l = _mm512_maskz_loadu_ps(lo[c][q], at);
                __m512 h = _mm512_maskz_loadu_ps(hi[c][q], at + 16);
                tap[0] = _mm512_permutex2var_ps(l, even, h);
                tap[1] = _mm512_permutex2var_ps(l, odd, h);
              }
#pragma GCC unroll 2
              for (int t = 0; t < S; ++t) {
                int kx = S * q + t;
                if (kx >= K)
                  break;
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                  int ky = ir - S * r;
                  if (ky >= 0 && ky < K)
                    acc[r][c] =
                        _mm512_fmadd_ps(w[ky * K + kx], tap[t], acc[r][c]);
                }
              }
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
          if (r < rows)
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c)
              if (keep[c])
                dwStore(g, acc[r][c], o + (y0 + r) * g.outH + x0 + 16 * c,
                        keep[c], bias);
      }
    }
  }
}

/// dwRowsChunk for `g`, or null where it does not apply (other strides,
/// dilations, kernels other than 3x3 and 5x5). Planes of rows of 8 or
/// fewer too: MobileNetV2's 960 x 7 x 7 ran in 35 us by rows (7 of 16 lanes
/// used) against 67 us as vectors across rows (dwChunk's wide mode, whose
/// per-vector bookkeeping costs more than the lanes).
ChunkFn dwRowsFn(const Geometry &g) {
  if (g.dh != 1 || g.dw != 1 || g.kh != g.kw || (g.kh != 3 && g.kh != 5))
    return nullptr;
  bool narrow = g.ow <= 16;
  if (g.sh == 2 && g.sw == 2) {
    if (g.kh == 3)
      return narrow ? dwRowsChunk<2, 3, 4, 1> : dwRowsChunk<2, 3, 4, 2>;
    return narrow ? dwRowsChunk<2, 5, 4, 1> : dwRowsChunk<2, 5, 2, 2>;
  }
  if (g.sh != 1 || g.sw != 1)
    return nullptr;
  if (g.kh == 3)
    return narrow ? dwRowsChunk<1, 3, 8, 1> : dwRowsChunk<1, 3, 4, 2>;
  return narrow ? dwRowsChunk<1, 5, 4, 1> : dwRowsChunk<1, 5, 2, 2>;
}

template <int SW>
ChunkFn dwFn(int64_t kh, int64_t kw) {
  if (kh == 3 && kw == 3)
    return dwChunk<SW, 3, 3>;
  if (kh == 5 && kw == 5)
    return dwChunk<SW, 5, 5>;
  return dwChunk<SW, 0, 0>;
}

void convAvx512(const Geometry &g, const float *in, const float *wt,
                const float *bias, float *out) {
  bool unit = g.sh == 1 && g.sw == 1;
  // The kernel by an estimate of each one's cycles (dist_rt/conv_plan.h,
  // which the compiler's cost model counts the same way).
  auto forced = static_cast<dist_rt::ConvKernel>(
      forcedKernel.load(std::memory_order_relaxed));
  dist_rt::conv_plan::ForwardPlan fp = dist_rt::conv_plan::forwardPlan(
      g.n, g.c, g.h, g.w, g.f, g.kh, g.kw, g.sh, g.sw, g.oh, g.ow, g.inH,
      forced == dist_rt::ConvKernel::Filters     ? 1
      : forced == dist_rt::ConvKernel::Positions ? 2
                                                 : 0,
      g.groups);
  // Depthwise convolutions with column strides of 1 or 2 by rows.
  if (g.groups > 1 && g.c == 1 && (g.sw == 1 || g.sw == 2) &&
      forced != dist_rt::ConvKernel::Positions) {
    DwPlan dp{&g, in, wt, bias, out, dwWide(g)};
    ChunkFn fn = dwRowsFn(g);
    if (!fn)
      fn = g.sw == 1 ? dwFn<1>(g.kh, g.kw) : dwFn<2>(g.kh, g.kw);
    dist_rt_parallel_for(g.n * g.groups * g.f, fn, &dp);
    return;
  }
  Plan pl;
  pl.hq = fp.phaseRows;
  pl.wq = fp.pitch;
  pl.positions = fp.positions;
  pl.fb = fp.fb;
  pl.v = fp.v;
  if (fp.filters) {
    convChannels(g, in, wt, bias, out, fp.p);
    return;
  }

  thread_local std::vector<float> phases, packed;
  thread_local std::vector<int64_t> taps;
  thread_local std::vector<char> usedPhases;
  pl.g = g;
  pl.bias = bias;
  pl.out = out;
  int64_t channelStride, phaseStride = 0;
  if (unit) {
    pl.x = in;
    pl.imageStride = g.inN;
    pl.groupStride = g.inG;
    channelStride = g.inC;
  } else {
    int64_t channels = g.groups * g.c;
    float *x =
        scratch(phases, size_t(g.n * channels * g.sh * g.sw * pl.hq * pl.wq));
    // The phases the taps read (all of them for kernels wider than the
    // stride, only (0, 0) for a 1x1 one).
    char *used = scratch(usedPhases, size_t(g.sh * g.sw));
    std::fill(used, used + g.sh * g.sw, 0);
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j)
        used[(i * g.dh % g.sh) * g.sw + j * g.dw % g.sw] = 1;
    PhaseCtx pc{&g, in, x, pl.hq, pl.wq, used};
    dist_rt_parallel_for(g.n * channels, phaseChunk, &pc);
    pl.x = x;
    phaseStride = pl.hq * pl.wq;
    channelStride = g.sh * g.sw * phaseStride;
    pl.imageStride = channels * channelStride;
    pl.groupStride = g.c * channelStride;
  }
  pl.k = g.c * g.kh * g.kw;
  int64_t *tp = scratch(taps, size_t(pl.k));
  for (int64_t c = 0, t = 0; c < g.c; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j, ++t) {
        int64_t ry = i * g.dh, rx = j * g.dw;
        int64_t phase = (ry % g.sh) * g.sw + rx % g.sw;
        tp[t] = c * channelStride + phase * phaseStride + (ry / g.sh) * pl.wq +
                rx / g.sw;
      }
  pl.taps = tp;
  pl.filterBlocks = (g.f + pl.fb - 1) / pl.fb;
  pl.chunks = ((pl.positions + 15) / 16 + pl.v - 1) / pl.v;
  {
    // A panel of P positions reads, per channel, the phase planes its taps
    // use over P positions plus the taps' reach within a plane.
    int64_t planes = 0, reach = 0;
    for (int64_t t = 0; t < pl.k; ++t) {
      int64_t within = tp[t] % channelStride;
      reach = std::max(reach, phaseStride ? within % phaseStride : within);
    }
    if (unit)
      planes = 1;
    else
      for (int64_t i = 0; i < g.sh * g.sw; ++i)
        planes += usedPhases[size_t(i)];
    pl.panelChunks = dist_rt::conv_plan::panelChunks(
        int64_t(panelBytes() / sizeof(float)), g.c, planes, reach, 16 * pl.v,
        pl.chunks);
  }
  pl.wp = packedFilters(wt, g.groups, g.f, pl.k, pl.fb, packed);
  ChunkFn fn = pl.fb == 8   ? tileFn<8>(pl.v)
               : pl.fb == 4 ? tileFn<4>(pl.v)
                            : tileFn<1>(pl.v);
  dist_rt_parallel_for(g.n * g.groups * pl.filterBlocks * pl.chunks, fn, &pl);
}

//===----------------------------------------------------------------------===//
// Weight gradient
//===----------------------------------------------------------------------===//

/// Everything the weight-gradient tiles of one call share.
struct GradPlan {
  Geometry g; ///< out* strides: dy's (images, filters, rows)
  const float *in;
  /// dy transposed per block of 16 filters: dyT[((b * blocks + blk) * P +
  /// p) * 16 + i] = dy[b, blk * 16 + i, p], zeros past the last filter.
  const float *dyT;
  /// Tap offsets into an image of the input, k = (c, kh, kw), and the
  /// tiles' tap ranges: tile r covers taps [r * span, min(k, (r+1) * span)).
  const int64_t *taps;
  int64_t k, span, ranges, blocks;
  float *dw;
};

/// dw rows of the 16 filters of block `blk` at taps [t0, t0 + T): sums over
/// every image and output position of dy (16 filters, one vector) times
/// the input element each tap reads there, broadcast.
template <int T>
__attribute__((target("avx512f"))) void gradTile(const GradPlan &pl,
                                                 int64_t blk, int64_t t0) {
  const Geometry &g = pl.g;
  __m512 acc[T];
#pragma GCC unroll 24
  for (int t = 0; t < T; ++t)
    acc[t] = _mm512_setzero_ps();
  int64_t off[T];
#pragma GCC unroll 24
  for (int t = 0; t < T; ++t)
    off[t] = pl.taps[t0 + t];
  int64_t positions = g.oh * g.ow;
  for (int64_t b = 0; b < g.n; ++b) {
    const float *dy = pl.dyT + (b * pl.blocks + blk) * positions * 16;
    for (int64_t y = 0; y < g.oh; ++y) {
      const float *row = pl.in + b * g.inN + y * g.sh * g.inH;
      for (int64_t x = 0; x < g.ow; ++x, dy += 16) {
        __m512 d = _mm512_loadu_ps(dy);
        const float *at = row + x * g.sw;
#pragma GCC unroll 24
        for (int t = 0; t < T; ++t)
          acc[t] = _mm512_fmadd_ps(d, _mm512_set1_ps(at[off[t]]), acc[t]);
      }
    }
  }
  // acc[t] lane i: dw[blk * 16 + i, t0 + t].
  alignas(64) float lanes[T][16];
#pragma GCC unroll 24
  for (int t = 0; t < T; ++t)
    _mm512_store_ps(lanes[t], acc[t]);
  int64_t filters = std::min<int64_t>(16, g.f - blk * 16);
  for (int64_t i = 0; i < filters; ++i) {
    float *row = pl.dw + (blk * 16 + i) * pl.k + t0;
    for (int t = 0; t < T; ++t)
      row[t] = g.accumulate ? row[t] + lanes[t][i] : lanes[t][i];
  }
}

using GradTileFn = void (*)(const GradPlan &, int64_t, int64_t);

template <int T>
GradTileFn gradTileFn(int n) {
  if constexpr (T == 1)
    return gradTile<1>;
  else
    return n == T ? gradTile<T> : gradTileFn<T - 1>(n);
}

__attribute__((target("avx512f"))) void gradChunk(void *ctx, int64_t begin,
                                                  int64_t end) {
  const GradPlan &pl = *static_cast<const GradPlan *>(ctx);
  for (int64_t item = begin; item < end; ++item) {
    int64_t r = item % pl.ranges, blk = item / pl.ranges;
    int64_t t0 = r * pl.span;
    int64_t count = std::min(pl.k, t0 + pl.span) - t0;
    gradTileFn<24>(static_cast<int>(count))(pl, blk, t0);
  }
}

/// Transposes dy's blocks of 16 filters into GradPlan::dyT.
struct TransposeCtx {
  const Geometry *g;
  const float *dy;
  float *dyT;
  int64_t blocks;
};

__attribute__((target("avx512f"))) void transposeChunk(void *ctx, int64_t begin,
                                                       int64_t end) {
  const TransposeCtx &tc = *static_cast<const TransposeCtx *>(ctx);
  const Geometry &g = *tc.g;
  int64_t positions = g.oh * g.ow;
  for (int64_t item = begin; item < end; ++item) {
    int64_t b = item / tc.blocks, blk = item % tc.blocks;
    float *dst = tc.dyT + item * positions * 16;
    int64_t filters = std::min<int64_t>(16, g.f - blk * 16);
    const float *src = tc.dy + b * g.outN + blk * 16 * g.outF;
    if (g.outH == g.ow) {
      // Positions contiguous: 16 x 16 blocks through the registers.
      for (int64_t p0 = 0; p0 < positions; p0 += 16) {
        int64_t count = std::min<int64_t>(16, positions - p0);
        __mmask16 m = static_cast<__mmask16>((1u << count) - 1);
        __m512 r[16];
        for (int i = 0; i < 16; ++i)
          r[i] = i < filters ? _mm512_maskz_loadu_ps(m, src + i * g.outF + p0)
                             : _mm512_setzero_ps();
        transpose16(r);
        for (int64_t p = 0; p < count; ++p)
          _mm512_storeu_ps(dst + (p0 + p) * 16, r[p]);
      }
      continue;
    }
    for (int64_t y = 0, p = 0; y < g.oh; ++y)
      for (int64_t x = 0; x < g.ow; ++x, ++p)
        for (int i = 0; i < 16; ++i)
          dst[p * 16 + i] =
              i < filters ? src[i * g.outF + y * g.outH + x] : 0.0f;
  }
}

void convGradAvx512(const Geometry &g, const float *in, const float *dy,
                    float *dw) {
  thread_local std::vector<float> transposed;
  thread_local std::vector<int64_t> taps;
  GradPlan pl;
  pl.g = g;
  pl.in = in;
  pl.dw = dw;
  pl.blocks = (g.f + 15) / 16;
  pl.k = g.c * g.kh * g.kw;
  pl.taps = inputTaps(g, taps);
  // Tap ranges of at most 24 (the accumulators), as even as possible.
  pl.ranges = (pl.k + 23) / 24;
  pl.span = (pl.k + pl.ranges - 1) / pl.ranges;
  pl.ranges = (pl.k + pl.span - 1) / pl.span;
  float *t =
      alignedScratch(transposed, size_t(g.n * pl.blocks * g.oh * g.ow * 16));
  TransposeCtx tc{&g, dy, t, pl.blocks};
  dist_rt_parallel_for(g.n * pl.blocks, transposeChunk, &tc);
  pl.dyT = t;
  dist_rt_parallel_for(pl.blocks * pl.ranges, gradChunk, &pl);
}

bool haveAvx512() {
  static const bool have =
      dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512;
  return have;
}

#endif // DIST_RT_CONV_AVX512

//===----------------------------------------------------------------------===//
// Depthwise convolution on AVX2
//===----------------------------------------------------------------------===//

#if DIST_RT_CONV_AVX512

// Machines with AVX2 and FMA but no AVX-512 (AMD Zen 1 to 3, most Intel
// client cores) run depthwise calls (one input channel a group) here; every
// other call there takes the plain loop. Codegen emits calls for such a
// machine only for depthwise kernels larger than 3x3: measured one layer at
// a time against the generated loops (AMD EPYC, Zen 3, one thread, batch
// 1), 5x5 layers of EfficientNet-B0 (144 x 56 x 56 at stride 2, 240 x 28 x
// 28, 672 x 14 x 14, 1152 x 7 x 7) took 0.33-0.79 ms against 0.84-3.7, and
// ConvNeXt-T's 7x7 on 96 x 56 x 56 1.24-1.43 ms against 11.7-12.4, but
// MobileNetV2's and ShuffleNetV2's 3x3 layers 1.2-1.5x as long as the
// loops (which vectorise a 3x3 kernel well; this kernel's big planes run
// at 20-23 GFLOP/s, its 7x7 and 14x14 ones at 5-10).
//
// A plane (image, group, filter) runs by blocks of four output rows and one
// vector of 8 output columns: per tap one broadcast weight and, per input
// row the block reads, one load that feeds every output row of the block
// using it (a 3x3 block at unit stride: 18 loads for 36 multiply-adds, four
// independent chains). Kernels of 3x3, 5x5 and 7x7 at strides 1 and 2
// without dilation read the input in place: at stride 2 a pair of loads
// (16 columns) is split into its even and odd columns in registers, and a
// vector whose loads would pass the input row's end loads with a mask
// (lanes past it read 0). Other shapes first copy each plane into a
// scratch whose rows are split into `sw` phases (column j*sw + p is element
// j of phase p) and padded with zeros, then read it with unit stride. The
// last vector of an output row computes all 8 lanes and stores the lanes
// inside the row through a small buffer: masked stores are microcoded on
// Zen 3 (an earlier AVX2 kernel that used them ran slower than the
// generated loops). Copying every plane, as a first version did, took a
// third of the depthwise time (the stride-2 layers' inputs are 4x their
// outputs); GCC 12 left the block's loops rolled, its accumulators on the
// stack, until told to unroll them (3x slower).

/// A plane as the generic rows read it: rows `rowStride` apart, phases
/// `phaseStride` apart within a row.
struct DwRows {
  const float *x;
  int64_t rowStride, phaseStride;
};

/// What every plane of one call shares.
struct DwAvx2Plan {
  const Geometry *g;
  const float *in, *wt, *bias;
  float *out;
  /// Phase row length of a plane copied for the generic rows; 0 when the
  /// call's shape reads in place.
  int64_t pitch;
  /// Input rows a plane's outputs read.
  int64_t rows;
};

/// activate() on 8 lanes (same ordered compares: NaN kept, -0 to +0).
__attribute__((target("avx2,fma"), always_inline)) inline __m256
activate8(const Geometry &g, __m256 r) {
  return dist_rt::reluClip8(r, g.relu, g.clip, g.lo, g.hi, g.gate);
}

/// Stores the `n` first lanes (1 to 8) of `r` at `at`, the old output
/// added when accumulating, then the bias and the activation.
__attribute__((target("avx2,fma"), always_inline)) inline void
dwStore8(const Geometry &g, __m256 r, float *at, int64_t n, __m256 bias) {
  if (n >= 8) {
    if (g.accumulate)
      r = _mm256_add_ps(r, _mm256_loadu_ps(at));
    _mm256_storeu_ps(at, activate8(g, _mm256_add_ps(r, bias)));
    return;
  }
  alignas(32) float buf[8] = {};
  if (g.accumulate) {
    std::memcpy(buf, at, size_t(n) * sizeof(float));
    r = _mm256_add_ps(r, _mm256_load_ps(buf));
  }
  _mm256_store_ps(buf, activate8(g, _mm256_add_ps(r, bias)));
  std::memcpy(at, buf, size_t(n) * sizeof(float));
}

/// 8 floats from `p`; with Masked, lanes at or past `left` (the elements
/// left in the row) read 0 without touching memory.
template <bool Masked>
__attribute__((target("avx2,fma"), always_inline)) inline __m256
load8(const float *p, int64_t left) {
  if constexpr (!Masked) {
    return _mm256_loadu_ps(p);
  } else {
    int n = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(8, left)));
    __m256i mask = _mm256_cmpgt_epi32(
        _mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_maskload_ps(p, mask);
  }
}

/// R output rows from `y0` of the plane at `x` (read in place), one vector
/// of 8 columns from `x0`, for a KH x KW kernel at strides S x S without
/// dilation.
template <int R, int KH, int KW, int S, bool Masked>
__attribute__((target("avx2,fma"), always_inline)) inline void
dwVectorFixed(const Geometry &g, const float *x, const float *w, float *o,
              int64_t y0, int64_t x0, __m256 bias) {
  static_assert(S == 1 || S == 2, "unit or double strides");
  // Vectors per input row: the taps' columns (stride 1), or the even and
  // odd columns of the pairs of loads at 0, 2, 4, ... (stride 2).
  constexpr int P = S == 1 ? KW : (KW + 1) / 2;
  __m256 acc[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    acc[r] = _mm256_setzero_ps();
  // Input row t of the block feeds output row r through kernel row
  // t - r*S: each load once. Unrolled whole so that the accumulators
  // stay in registers.
#pragma GCC unroll 16
  for (int t = 0; t < (R - 1) * S + KH; ++t) {
    const float *row = x + (y0 * S + t) * g.inH;
    __m256 tap[KW];
    if constexpr (S == 1) {
#pragma GCC unroll 8
      for (int j = 0; j < KW; ++j)
        tap[j] = load8<Masked>(row + x0 + j, g.w - (x0 + j));
    } else {
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        int64_t c = 2 * x0 + 2 * p;
        __m256 lo = load8<Masked>(row + c, g.w - c);
        __m256 hi = load8<Masked>(row + c + 8, g.w - c - 8);
        // Within each 128-bit half the evens (odds) of lo then of hi; the
        // 64-bit quarters then back in order.
        tap[2 * p] = _mm256_castpd_ps(_mm256_permute4x64_pd(
            _mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xd8));
        if (2 * p + 1 < KW)
          tap[2 * p + 1] = _mm256_castpd_ps(_mm256_permute4x64_pd(
              _mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xdd)), 0xd8));
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < KW; ++j)
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        int i = t - r * S;
        if (i >= 0 && i < KH)
          acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + i * KW + j), tap[j],
                                   acc[r]);
      }
  }
  int64_t n = std::min<int64_t>(8, g.ow - x0);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    dwStore8(g, acc[r], o + (y0 + r) * g.outH + x0, n, bias);
}

/// R output rows from `y0`, every vector of them (dwVectorFixed); the
/// vectors whose loads would pass a row's end load with a mask.
template <int R, int KH, int KW, int S>
__attribute__((target("avx2,fma"), always_inline)) inline void
dwRowsFixed(const Geometry &g, const float *x, const float *w, float *o,
            int64_t y0, __m256 bias) {
  // Columns past x0 * S that a vector's loads reach.
  constexpr int64_t reach = S == 1 ? KW + 7 : 2 * ((KW - 1) / 2) + 16;
  int64_t x0 = 0;
  for (; x0 < g.ow && x0 * S + reach <= g.w; x0 += 8)
    dwVectorFixed<R, KH, KW, S, false>(g, x, w, o, y0, x0, bias);
  for (; x0 < g.ow; x0 += 8)
    dwVectorFixed<R, KH, KW, S, true>(g, x, w, o, y0, x0, bias);
}

/// R output rows from `y0` of a copied plane (any kernel, strides and
/// dilations): one load per output row and tap.
template <int R>
__attribute__((target("avx2,fma"))) void
dwRowsGeneric(const Geometry &g, const DwRows &src, const float *w, float *o,
              int64_t y0, __m256 bias) {
  for (int64_t x0 = 0; x0 < g.ow; x0 += 8) {
    __m256 acc[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        int64_t col = j * g.dw;
        __m256 wv = _mm256_broadcast_ss(w + i * g.kw + j);
        const float *at = src.x + i * g.dh * src.rowStride +
                          (col % g.sw) * src.phaseStride + col / g.sw + x0;
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
          acc[r] = _mm256_fmadd_ps(
              wv, _mm256_loadu_ps(at + (y0 + r) * g.sh * src.rowStride),
              acc[r]);
      }
    int64_t n = std::min<int64_t>(8, g.ow - x0);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      dwStore8(g, acc[r], o + (y0 + r) * g.outH + x0, n, bias);
  }
}

/// One plane read in place: blocks of 4 output rows, then the last rows.
template <int KH, int KW, int S>
__attribute__((target("avx2,fma"))) void
dwPlaneFixed(const Geometry &geometry, const float *x, const float *w, float *o,
             __m256 bias) {
  // A local copy: the stores through `o` could alias the caller's, which
  // made every row reload the flags and sizes (and kept weights out of
  // registers).
  const Geometry g = geometry;
  int64_t y = 0;
  for (; y + 4 <= g.oh; y += 4)
    dwRowsFixed<4, KH, KW, S>(g, x, w, o, y, bias);
  for (; y < g.oh; ++y)
    dwRowsFixed<1, KH, KW, S>(g, x, w, o, y, bias);
}

using DwPlaneFn = void (*)(const Geometry &, const float *, const float *,
                           float *, __m256);

/// The in-place kernel for the call's shape, or null (generic rows).
DwPlaneFn dwPlaneFixedFn(const Geometry &g) {
  if (g.dh != 1 || g.dw != 1 || g.sh != g.sw || g.kh != g.kw)
    return nullptr;
  switch (g.kh * 10 + g.sh) {
  case 31:
    return dwPlaneFixed<3, 3, 1>;
  case 32:
    return dwPlaneFixed<3, 3, 2>;
  case 51:
    return dwPlaneFixed<5, 5, 1>;
  case 52:
    return dwPlaneFixed<5, 5, 2>;
  case 71:
    return dwPlaneFixed<7, 7, 1>;
  default:
    return nullptr;
  }
}

/// Copies input plane `x` into `dst` for the generic rows: `rows` rows of
/// g.sw phases of `pitch` elements, zeros past the input row's end.
void copyPlane(const Geometry &g, const float *x, int64_t rows, int64_t pitch,
               float *dst) {
  for (int64_t y = 0; y < rows; ++y) {
    const float *s = x + y * g.inH;
    float *d = dst + y * g.sw * pitch;
    for (int64_t p = 0; p < g.sw; ++p)
      for (int64_t j = 0; j < pitch; ++j) {
        int64_t col = j * g.sw + p;
        d[p * pitch + j] = col < g.w ? s[col] : 0.0f;
      }
  }
}

__attribute__((target("avx2,fma"))) void dwChunkAvx2(void *ctx, int64_t begin,
                                                     int64_t end) {
  const DwAvx2Plan &pl = *static_cast<const DwAvx2Plan *>(ctx);
  const Geometry &g = *pl.g;
  DwPlaneFn fixed = dwPlaneFixedFn(g);
  thread_local std::vector<float> copy;
  float *buf =
      fixed ? nullptr : alignedScratch(copy, size_t(pl.rows * g.sw * pl.pitch));
  int64_t planes = g.groups * g.f;
  int64_t copied = -1;
  for (int64_t item = begin; item < end; ++item) {
    int64_t b = item / planes, gf = item % planes, grp = gf / g.f;
    const float *x = pl.in + b * g.inN + grp * g.inG;
    float *o = pl.out + b * g.outN + grp * g.outG + gf % g.f * g.outF;
    const float *w = pl.wt + gf * g.kh * g.kw;
    __m256 bias = _mm256_set1_ps(pl.bias ? pl.bias[gf] : 0.0f);
    if (fixed) {
      fixed(g, x, w, o, bias);
      continue;
    }
    // Planes of one group (a channel multiplier) share their copy.
    int64_t key = b * g.groups + grp;
    if (key != copied)
      copyPlane(g, x, pl.rows, pl.pitch, buf);
    copied = key;
    DwRows src{buf, g.sw * pl.pitch, pl.pitch};
    int64_t y = 0;
    for (; y + 4 <= g.oh; y += 4)
      dwRowsGeneric<4>(g, src, w, o, y, bias);
    for (; y < g.oh; ++y)
      dwRowsGeneric<1>(g, src, w, o, y, bias);
  }
}

/// Runs a depthwise call (g.c == 1) on AVX2; false when the host lacks
/// AVX2 or FMA (nothing written then).
bool depthwiseAvx2(const Geometry &g, const float *in, const float *wt,
                   const float *bias, float *out) {
  static const bool have = dist_rt::hostSimdLevel() >= dist_rt::SimdLevel::Avx2;
  if (!have || g.c != 1 || g.kh <= 0 || g.kw <= 0 || g.sh <= 0 || g.sw <= 0 ||
      g.dh <= 0 || g.dw <= 0)
    return false;
  DwAvx2Plan pl{
      &g, in, wt, bias, out, 0, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1};
  if (!dwPlaneFixedFn(g))
    // Element j of a phase row is read up to the last vector's last lane
    // plus the widest tap's offset.
    pl.pitch = (g.ow + 7) / 8 * 8 + (g.kw - 1) * g.dw / g.sw + 1;
  dist_rt_parallel_for(g.n * g.groups * g.f, dwChunkAvx2, &pl);
  return true;
}

#endif // DIST_RT_CONV_AVX512

//===----------------------------------------------------------------------===//
// Convolution as products by panels
//===----------------------------------------------------------------------===//

// Calls the kernels above do not take (any call on a host without AVX-512,
// but depthwise ones on AVX2) run as matrix products, one per panel of
// output positions: out[f, P] = W[f, K] x cols[K, P] with K = c*kh*kw,
// cols the panel's im2col columns (or, for a 1x1 kernel at unit stride
// over whole rows, the input itself), the product on OpenBLAS or oneDNN
// (dist_rt_gemm_set_f32), then the bias, the old output and the activation
// applied to the panel while it is still in cache (constant filters on a
// host with sgemm_packed.cpp's kernel are packed once, and that product
// applies them as it stores its tiles, into the output in place). A
// panel's columns and outputs fit in half the L2 cache (panelBytes), at
// least kMinPanel positions. It replaced a plain loop, 40 to 100 times
// slower (one thread: ResNet-50's 3x3 layer on 64 x 56 x 56 took 332 ms
// against 3.3, its 7x7 stem 172 against 4.3), for what the compiler sends
// here without AVX-512 (`dist-opt --conv=direct`, and grouped convolutions
// of several channels a group on AVX2 hosts).
//
// Generated code does the same with whole-image columns and a separate
// bias-and-activation pass over the output. Alone, the panels won on
// ResNet-50's k x k layers (dist-conv-bench, AVX2 AMD EPYC, one thread:
// 0.96-1.40x, the 7x7 stem and the stride-2 3x3 layers most), but a
// ResNet-50 compiled to call them for every such layer was no faster
// (6 alternating runs, 133-178 ms against 130-194, medians 156 and 155),
// so the compiler keeps its columns there.

/// Calls run as products by panels (productConvCalls).
std::atomic<int64_t> productCalls{0};

/// Positions a panel holds at the least, however small the cache, so that
/// no product is only a few columns wide.
constexpr int64_t kMinPanel = 256;

struct ProductPlan {
  const Geometry *g;
  const float *in, *wt, *bias;
  float *out;
  /// Taps per filter (c * kh * kw) and output positions per plane.
  int64_t k, positions;
  /// Positions per panel, panels per plane, filters per unit of work and
  /// such units per panel.
  int64_t panel, panels, fb, fblocks;
  /// The product reads the input in place (1x1, unit strides, rows
  /// contiguous) / writes the output in place (rows contiguous).
  bool directB, directC;
  /// Each group's filters packed once (sgemm_packed.cpp's packedSgemmA,
  /// constant weights on hosts where that kernel runs), or null: the
  /// products then run on it, with the bias and activation applied as
  /// tiles are stored when the output is written in place.
  std::vector<const float *> packedGroups;
};

/// cols[t, p - p0] = the input element that tap t reads for output position
/// p, for p in [p0, p1): the im2col columns of one panel, `p1 - p0` apart.
void panelColumns(const Geometry &g, const float *x, int64_t p0, int64_t p1,
                  float *cols) {
  int64_t width = p1 - p0, t = 0;
  for (int64_t ci = 0; ci < g.c; ++ci)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j, ++t) {
        const float *base = x + ci * g.inC + i * g.dh * g.inH + j * g.dw;
        float *d = cols + t * width;
        for (int64_t p = p0; p < p1;) {
          int64_t y = p / g.ow, x0 = p % g.ow;
          int64_t len = std::min(g.ow - x0, p1 - p);
          const float *s = base + y * g.sh * g.inH + x0 * g.sw;
          if (g.sw == 1) {
            std::memcpy(d, s, size_t(len) * sizeof(float));
          } else {
            for (int64_t q = 0; q < len; ++q)
              d[q] = s[q * g.sw];
          }
          d += len;
          p += len;
        }
      }
}

/// o[i] = activate((old o[i] when `addOld`) + c[i] + bias) for i < n.
void productEpilogue(const Geometry &g, const float *c, float *o, int64_t n,
                     float bias, bool addOld) {
  for (int64_t i = 0; i < n; ++i) {
    float v = addOld ? o[i] : 0.0f;
    v += c[i];
    o[i] = activate(g, v + bias);
  }
}

#if DIST_RT_CONV_AVX512
__attribute__((target("avx2,fma"))) void
productEpilogueAvx2(const Geometry &g, const float *c, float *o, int64_t n,
                    float bias, bool addOld) {
  __m256 b = _mm256_set1_ps(bias);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(c + i);
    if (addOld)
      v = _mm256_add_ps(_mm256_loadu_ps(o + i), v);
    _mm256_storeu_ps(o + i, activate8(g, _mm256_add_ps(v, b)));
  }
  productEpilogue(g, c + i, o + i, n - i, bias, addOld);
}
#endif

void productChunk(void *ctx, int64_t begin, int64_t end) {
  const ProductPlan &pl = *static_cast<const ProductPlan *>(ctx);
  const Geometry &g = *pl.g;
  thread_local std::vector<float> colsBuf, outBuf;
  float *cols =
      pl.directB ? nullptr : alignedScratch(colsBuf, size_t(pl.k * pl.panel));
  float *tmp =
      pl.directC ? nullptr : alignedScratch(outBuf, size_t(pl.fb * pl.panel));
#if DIST_RT_CONV_AVX512
  static const bool avx2 = dist_rt::hostSimdLevel() >= dist_rt::SimdLevel::Avx2;
  auto epilogue = avx2 ? productEpilogueAvx2 : productEpilogue;
#else
  auto epilogue = productEpilogue;
#endif
  int64_t columnsOf = -1;
  for (int64_t item = begin; item < end; ++item) {
    int64_t fblk = item % pl.fblocks, rest = item / pl.fblocks;
    int64_t pi = rest % pl.panels, plane = rest / pl.panels;
    int64_t b = plane / g.groups, grp = plane % g.groups;
    int64_t p0 = pi * pl.panel, p1 = std::min(p0 + pl.panel, pl.positions);
    int64_t f0 = fblk * pl.fb, f1 = std::min(f0 + pl.fb, g.f);
    if (p0 >= p1 || f0 >= f1)
      continue;
    const float *x = pl.in + b * g.inN + grp * g.inG;
    int64_t bPtr, bStride;
    if (pl.directB) {
      bPtr = int64_t(reinterpret_cast<intptr_t>(x + p0));
      bStride = g.inC;
    } else {
      // Units of one panel (its filter blocks) share its columns.
      if (rest != columnsOf)
        panelColumns(g, x, p0, p1, cols);
      columnsOf = rest;
      bPtr = int64_t(reinterpret_cast<intptr_t>(cols));
      bStride = p1 - p0;
    }
    float *o = pl.out + b * g.outN + grp * g.outG + f0 * g.outF;
    float *c = pl.directC ? o + p0 : tmp;
    int64_t cStride = pl.directC ? g.outF : p1 - p0;
    int64_t aPtr =
        int64_t(reinterpret_cast<intptr_t>(pl.wt + (grp * g.f + f0) * pl.k));
    // With the output in place and accumulating, the product adds to it.
    bool addInProduct = pl.directC && g.accumulate;
    if (!pl.packedGroups.empty()) {
      // The product writes the output in place, through the bias, the old
      // output and the activation, as its tiles are stored.
      const float *bm = reinterpret_cast<const float *>(bPtr);
      dist_rt::PackedEpilogue e{pl.bias ? pl.bias + grp * g.f + f0 : nullptr,
                                g.relu, g.clip, g.lo, g.hi};
      e.gate = g.gate;
      // Rows of the output apart (inside a padded buffer): C's columns as
      // the image's positions.
      dist_rt::PackedImageColumns image{p0, g.ow, g.outH};
      dist_rt::packedSgemmA(
          f1 - f0, p1 - p0, pl.k, pl.packedGroups[grp], g.f, f0, bm, bStride,
          pl.directC ? o + p0 : o + p0 / g.ow * g.outH + p0 % g.ow, g.outF,
          !g.accumulate, &e, pl.directC ? nullptr : &image);
      continue;
    }
    (addInProduct ? dist_rt_gemm_f32 : dist_rt_gemm_set_f32)(
        1, f1 - f0, p1 - p0, pl.k, aPtr, 0, pl.k, 1, bPtr, bStride, 1,
        int64_t(reinterpret_cast<intptr_t>(c)), 0, cStride, 1, 0);
    for (int64_t f = f0; f < f1; ++f) {
      float bias = pl.bias ? pl.bias[grp * g.f + f] : 0.0f;
      const float *cf = c + (f - f0) * cStride;
      float *of = o + (f - f0) * g.outF;
      if (pl.directC) {
        epilogue(g, cf, of + p0, p1 - p0, bias, false);
        continue;
      }
      for (int64_t p = p0; p < p1;) {
        int64_t y = p / g.ow, x0 = p % g.ow;
        int64_t len = std::min(g.ow - x0, p1 - p);
        epilogue(g, cf + (p - p0), of + y * g.outH + x0, len, bias,
                 g.accumulate);
        p += len;
      }
    }
  }
}

/// Runs a call as products by panels (see above); false when its kernel has
/// no taps.
bool convProduct(const Geometry &g, const float *in, const float *wt,
                 const float *bias, float *out) {
  ProductPlan pl{&g, in, wt, bias, out};
  pl.k = g.c * g.kh * g.kw;
  if (pl.k <= 0)
    return false;
  pl.positions = g.oh * g.ow;
  pl.directB = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 &&
               g.ow == g.w && g.inH == g.w;
  pl.directC = g.outH == g.ow;
  int64_t budget = int64_t(panelBytes() / sizeof(float));
  int64_t perPosition = (pl.directB ? 0 : pl.k) + g.f;
  // (Tests fix small panels to have several.)
  int64_t least =
      forcedPanelBytes.load(std::memory_order_relaxed) ? 8 : kMinPanel;
  int64_t panel = std::max(least, budget / perPosition);
  panel = (panel + 7) / 8 * 8;
  pl.panels = (pl.positions + panel - 1) / panel;
  // Equal panels, and as many as the threads where a plane has several.
  int64_t threads = dist_rt_get_num_threads();
  int64_t planes = g.n * g.groups;
  if (pl.panels > 1 && planes < threads)
    pl.panels = std::max(pl.panels, (threads + planes - 1) / planes);
  pl.panel = (pl.positions + pl.panels - 1) / pl.panels;
  // Constant filters on a host with the packed kernel: packed once.
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    // Whether to pack weighs the whole call (every group's products).
    const float *packed =
        dist_rt::packedConstantA(wt + grp * g.f * pl.k, g.f,
                                 g.n * g.groups * pl.positions, pl.k, pl.k, 1);
    if (!packed) {
      pl.packedGroups.clear();
      break;
    }
    pl.packedGroups.push_back(packed);
  }
  pl.panels = (pl.positions + pl.panel - 1) / pl.panel;
  // Too few panels for the threads: split the filters too (blocks of 8, or
  // of 24 for the packed filters' tiles of 6).
  pl.fb = g.f, pl.fblocks = 1;
  int64_t units = planes * pl.panels;
  int64_t unit = pl.packedGroups.empty() ? 8 : 24;
  if (units < threads && g.f >= 16) {
    int64_t want = std::min((threads + units - 1) / units, g.f / 8);
    pl.fb = ((g.f + want - 1) / want + unit - 1) / unit * unit;
    pl.fblocks = (g.f + pl.fb - 1) / pl.fb;
  }
  dist_rt_parallel_for(units * pl.fblocks, productChunk, &pl);
  productCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

/// Which way a call of one geometry runs on an AVX-512 host, chosen by
/// timing both: the AVX-512 tiles, tuned on an AMD EPYC with AVX-512, ran
/// ResNet-50's 3x3 layers at 62-112 GFLOP/s on an Intel Xeon (family 6
/// model 207, one thread, dist-conv-bench) where products by panels ran
/// them at 98-130 (oneDNN's sgemm), while its 7x7 stem ran at 134 on the
/// tiles and 90 as products. Neither wins on every CPU and shape, so the
/// first calls of a geometry (its sizes, strides, flags and the pool's
/// threads) alternate the two, kTrials each, and the rest take the faster
/// (the fastest trial of each: noise only slows). Depthwise calls stay on
/// the tiles (products of one row a plane). DIST_RT_CONV_TUNE=0 keeps the
/// tiles everywhere (their rounding on every run).
constexpr int kTrials = 2;

struct TuneKey {
  int64_t v[24];
  bool operator==(const TuneKey &o) const {
    return std::memcmp(v, o.v, sizeof(v)) == 0;
  }
};

struct TuneKeyHash {
  size_t operator()(const TuneKey &k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v)
      h = (h ^ uint64_t(x)) * 1099511628211ull;
    return size_t(h);
  }
};

struct Tuning {
  /// Trials run so far (tiles first, then alternating).
  int runs = 0;
  /// The fastest trial of the tiles [0] and the products [1], seconds.
  double best[2] = {1e300, 1e300};
  /// -1 while trials run, else 0 (tiles) or 1 (products).
  int choice = -1;
};

struct TuneTable {
  std::mutex mutex;
  std::unordered_map<TuneKey, Tuning, TuneKeyHash> calls;
};

TuneTable &tuneTable() {
  static TuneTable *table = new TuneTable; // used until exit
  return *table;
}

std::atomic<int> tuningOn{-1};

bool convTuning() {
  int on = tuningOn.load(std::memory_order_relaxed);
  if (on < 0) {
    const char *e = std::getenv("DIST_RT_CONV_TUNE");
    on = e && std::strcmp(e, "0") == 0 ? 0 : 1;
    tuningOn.store(on, std::memory_order_relaxed);
  }
  return on == 1;
}

TuneKey tuneKey(const Geometry &g) {
  return TuneKey{{g.n,
                  g.c,
                  g.h,
                  g.w,
                  g.f,
                  g.kh,
                  g.kw,
                  g.sh,
                  g.sw,
                  g.dh,
                  g.dw,
                  g.oh,
                  g.ow,
                  g.groups,
                  g.inN,
                  g.inG,
                  g.inC,
                  g.inH,
                  g.outN,
                  g.outG,
                  g.outF,
                  g.outH,
                  int64_t(g.accumulate) | int64_t(g.relu) << 1 |
                      int64_t(g.clip) << 2 | int64_t(g.gate) << 3,
                  dist_rt_get_num_threads()}};
}

/// The way this call takes: 0 the tiles, 1 the products; `trial` set while
/// the geometry's trials run.
int tunedWay(const TuneKey &key, bool &trial) {
  TuneTable &t = tuneTable();
  std::lock_guard<std::mutex> lock(t.mutex);
  Tuning &u = t.calls[key];
  trial = u.choice < 0;
  return trial ? u.runs % 2 : u.choice;
}

void recordTrial(const TuneKey &key, int way, double seconds) {
  TuneTable &t = tuneTable();
  std::lock_guard<std::mutex> lock(t.mutex);
  Tuning &u = t.calls[key];
  if (u.choice >= 0)
    return;
  u.best[way] = std::min(u.best[way], seconds);
  if (++u.runs >= 2 * kTrials)
    u.choice = u.best[1] < u.best[0] ? 1 : 0;
}

} // namespace

void dist_rt::setConvTuning(bool on) {
  tuningOn.store(on ? 1 : 0, std::memory_order_relaxed);
}

void dist_rt::setConvKernel(ConvKernel kernel) {
  forcedKernel.store(static_cast<int>(kernel));
}

void dist_rt::setConvPanelBytes(size_t bytes) { forcedPanelBytes.store(bytes); }

int64_t dist_rt::productConvCalls() {
  return productCalls.load(std::memory_order_relaxed);
}

namespace {

/// Both forward entry points: `g` without its flags and pointers.
void convForward(Geometry g, int64_t in_ptr, int64_t w_ptr, int64_t bias_ptr,
                 int64_t out_ptr, float lo, float hi, int64_t flags) {
  if (g.n <= 0 || g.f <= 0 || g.groups <= 0 || g.oh <= 0 || g.ow <= 0)
    return;
  g.accumulate = (flags & DIST_RT_CONV_ACCUMULATE) != 0;
  g.relu = (flags & DIST_RT_CONV_RELU) != 0;
  g.clip = (flags & DIST_RT_CONV_CLIP) != 0;
  g.gate = dist_rt::gateOf(flags & DIST_RT_CONV_SILU,
                           flags & DIST_RT_CONV_HARDSWISH);
  g.lo = lo, g.hi = hi;
  const auto *in =
      reinterpret_cast<const float *>(static_cast<intptr_t>(in_ptr));
  const auto *wt =
      reinterpret_cast<const float *>(static_cast<intptr_t>(w_ptr));
  const auto *bias =
      reinterpret_cast<const float *>(static_cast<intptr_t>(bias_ptr));
  auto *out = reinterpret_cast<float *>(static_cast<intptr_t>(out_ptr));
#if DIST_RT_CONV_AVX512
  auto forced = static_cast<dist_rt::ConvKernel>(
      forcedKernel.load(std::memory_order_relaxed));
  if (forced == dist_rt::ConvKernel::Avx2 &&
      depthwiseAvx2(g, in, wt, bias, out))
    return;
  if (haveAvx512() && forced != dist_rt::ConvKernel::Plain &&
      forced != dist_rt::ConvKernel::Product && g.c > 0 && g.kh > 0 &&
      g.kw > 0) {
    bool depthwise = g.c == 1 && g.f == 1;
    if (forced == dist_rt::ConvKernel::Auto && !depthwise && convTuning()) {
      TuneKey key = tuneKey(g);
      bool trial = false;
      int way = tunedWay(key, trial);
      auto start = std::chrono::steady_clock::now();
      if (way == 1 && !convProduct(g, in, wt, bias, out)) {
        // No taps: the tiles (and only they) from now on.
        recordTrial(key, 1, 1e300);
        convAvx512(g, in, wt, bias, out);
        return;
      }
      if (way == 0)
        convAvx512(g, in, wt, bias, out);
      if (trial)
        recordTrial(key, way,
                    std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
      return;
    }
    convAvx512(g, in, wt, bias, out);
    return;
  }
  if (forced != dist_rt::ConvKernel::Plain &&
      forced != dist_rt::ConvKernel::Product &&
      depthwiseAvx2(g, in, wt, bias, out))
    return;
#endif
  // A depthwise call without AVX2 would make products of one row a plane:
  // it keeps the loop.
  bool depthwise = g.c == 1 && g.f == 1;
  if (forced != dist_rt::ConvKernel::Plain &&
      (forced == dist_rt::ConvKernel::Product || !depthwise) &&
      convProduct(g, in, wt, bias, out))
    return;
  PlainCtx ctx{&g, in, wt, bias, out};
  dist_rt_parallel_for(g.n * g.groups * g.f, plainChunk, &ctx);
}

/// Names a convolution's shape in the profile (DIST_RT_PROFILE).
void describeConv(dist_rt::ProfileScope &prof, const Geometry &g) {
  int64_t groups = std::max<int64_t>(g.groups, 1);
  double flops = 2.0 * static_cast<double>(groups * g.n * g.f) *
                 static_cast<double>(g.oh * g.ow) *
                 static_cast<double>(g.c * g.kh * g.kw);
  char groupText[32] = "";
  if (groups > 1)
    std::snprintf(groupText, sizeof groupText, " in %lld groups",
                  (long long)groups);
  prof.describe(flops,
                "n%lld, %lld -> %lld channels%s, %lldx%lld -> %lldx%lld, "
                "kernel %lldx%lld, strides %lldx%lld, dilations %lldx%lld",
                (long long)g.n, (long long)(g.c * groups),
                (long long)(g.f * groups), groupText, (long long)g.h,
                (long long)g.w, (long long)g.oh, (long long)g.ow,
                (long long)g.kh, (long long)g.kw, (long long)g.sh,
                (long long)g.sw, (long long)g.dh, (long long)g.dw);
}

} // namespace

extern "C" void dist_rt_conv2d_f32(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,
    int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t oh,
    int64_t ow, int64_t in_ptr, int64_t in_sn, int64_t in_sc, int64_t in_sh,
    int64_t w_ptr, int64_t bias_ptr, int64_t out_ptr, int64_t out_sn,
    int64_t out_sf, int64_t out_sh, float lo, float hi, int64_t flags) {
  Geometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.f = f, g.kh = kh, g.kw = kw;
  g.sh = sh, g.sw = sw, g.dh = dh, g.dw = dw, g.oh = oh, g.ow = ow;
  g.inN = in_sn, g.inC = in_sc, g.inH = in_sh, g.inG = c * in_sc;
  g.outN = out_sn, g.outF = out_sf, g.outH = out_sh, g.outG = f * out_sf;
  dist_rt::ProfileScope prof("conv2d");
  if (prof.active())
    describeConv(prof, g);
  convForward(g, in_ptr, w_ptr, bias_ptr, out_ptr, lo, hi, flags);
}

extern "C" void dist_rt_conv2d_group_f32(
    int64_t groups, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
    int64_t oh, int64_t ow, int64_t in_ptr, int64_t in_sn, int64_t in_sg,
    int64_t in_sc, int64_t in_sh, int64_t w_ptr, int64_t bias_ptr,
    int64_t out_ptr, int64_t out_sn, int64_t out_sg, int64_t out_sf,
    int64_t out_sh, float lo, float hi, int64_t flags) {
  Geometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.f = f, g.kh = kh, g.kw = kw;
  g.sh = sh, g.sw = sw, g.dh = dh, g.dw = dw, g.oh = oh, g.ow = ow;
  g.groups = groups;
  g.inN = in_sn, g.inG = in_sg, g.inC = in_sc, g.inH = in_sh;
  g.outN = out_sn, g.outG = out_sg, g.outF = out_sf, g.outH = out_sh;
  dist_rt::ProfileScope prof(groups > 1 ? "conv2d grouped" : "conv2d");
  if (prof.active())
    describeConv(prof, g);
  convForward(g, in_ptr, w_ptr, bias_ptr, out_ptr, lo, hi, flags);
}

extern "C" void dist_rt_conv2d_wgrad_f32(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,
    int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t oh,
    int64_t ow, int64_t in_ptr, int64_t in_sn, int64_t in_sc, int64_t in_sh,
    int64_t dy_ptr, int64_t dy_sn, int64_t dy_sf, int64_t dy_sh, int64_t dw_ptr,
    int64_t flags) {
  if (f <= 0 || c <= 0 || kh <= 0 || kw <= 0)
    return;
  Geometry g;
  g.n = n > 0 ? n : 0, g.c = c, g.h = h, g.w = w, g.f = f, g.kh = kh;
  g.kw = kw, g.sh = sh, g.sw = sw, g.dh = dh, g.dw = dw;
  g.oh = oh > 0 ? oh : 0, g.ow = ow > 0 ? ow : 0;
  g.inN = in_sn, g.inC = in_sc, g.inH = in_sh;
  g.outN = dy_sn, g.outF = dy_sf, g.outH = dy_sh;
  g.accumulate = (flags & DIST_RT_CONV_ACCUMULATE) != 0;
  g.relu = false;
  dist_rt::ProfileScope prof("conv2d weight gradient");
  if (prof.active())
    describeConv(prof, g);
  const auto *in =
      reinterpret_cast<const float *>(static_cast<intptr_t>(in_ptr));
  const auto *dy =
      reinterpret_cast<const float *>(static_cast<intptr_t>(dy_ptr));
  auto *out = reinterpret_cast<float *>(static_cast<intptr_t>(dw_ptr));
#if DIST_RT_CONV_AVX512
  if (haveAvx512() && g.n > 0 && g.oh > 0 && g.ow > 0 &&
      forcedKernel.load(std::memory_order_relaxed) !=
          static_cast<int>(dist_rt::ConvKernel::Plain)) {
    convGradAvx512(g, in, dy, out);
    return;
  }
#endif
  GradPlainCtx ctx{&g, in, dy, out};
  dist_rt_parallel_for(f * c * kh * kw, gradPlainChunk, &ctx);
}
