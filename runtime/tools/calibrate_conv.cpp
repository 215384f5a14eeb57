//===- calibrate_conv.cpp - Direct convolution rates for dist-calibrate ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Times the runtime's direct forward convolution (dist_rt_conv2d_f32, on
// AVX-512) on three small calls per thread count and turns their times into
// the per-tap and per-tile rates that the cost model prices the tiles of
// dist_rt/conv_plan.h with.
//
//===----------------------------------------------------------------------===//

#include "calibrate.h"

#include "dist_rt/conv_plan.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace calibrate {

bool measureDirectConv(int32_t threadsMax, double minTimeS,
                       std::vector<ConvRates> &rates) {
  if (!__builtin_cpu_supports("avx512f"))
    return true;
  struct Probe {
    int64_t c, h, oh;
  };
  constexpr Probe probes[3] = {{4, 18, 16}, {32, 18, 16}, {32, 10, 8}};
  constexpr int64_t n = 8, f = 32, kh = 3, kw = 3, maxC = 32, maxH = 18;
  RuntimeBuffer in(size_t(n * maxC * maxH * maxH) * sizeof(float));
  RuntimeBuffer weight(size_t(f * maxC * kh * kw) * sizeof(float));
  RuntimeBuffer bias(size_t(f) * sizeof(float));
  RuntimeBuffer out(size_t(n * f * 16 * 16) * sizeof(float));
  if (!in || !weight || !bias || !out)
    return false;
  fillPseudoRandom(in.as<float>(), size_t(n * maxC * maxH * maxH), 11);
  fillPseudoRandom(weight.as<float>(), size_t(f * maxC * kh * kw), 12);
  fillPseudoRandom(bias.as<float>(), size_t(f), 13);
  auto ptr = [](const RuntimeBuffer &b) {
    return int64_t(intptr_t(b.as<float>()));
  };
  for (int32_t t = 1; t <= threadsMax; ++t) {
    dist_rt_set_num_threads(t);
    // Per probe: one thread's share (the call's time over the imbalance of
    // its tiles, times the threads) per tile, and taps per tile.
    double perTile[3], taps[3];
    for (int i = 0; i < 3; ++i) {
      const Probe &p = probes[i];
      auto plan = dist_rt::conv_plan::forwardPlan(n, p.c, p.h, p.h, f, kh, kw,
                                                  1, 1, p.oh, p.oh, p.h);
      double s = secondsPerCall(
          [&] {
            dist_rt_conv2d_f32(
                n, p.c, p.h, p.h, f, kh, kw, 1, 1, 1, 1, p.oh, p.oh, ptr(in),
                p.c * p.h * p.h, p.h * p.h, p.h, ptr(weight), ptr(bias),
                ptr(out), f * p.oh * p.oh, p.oh * p.oh, p.oh, 0.0f, 0.0f, 0);
            clobberMemory();
          },
          minTimeS);
      perTile[i] = s * t / dist_rt::conv_plan::imbalance(plan.items, t) /
                   double(plan.items);
      taps[i] = plan.tileTaps / double(plan.items);
    }
    ConvRates r{t, 0, 0, 0};
    if (rates.empty()) {
      r.tap = (perTile[1] - perTile[0]) / (taps[1] - taps[0]);
      r.tile = perTile[0] - r.tap * taps[0];
      if (r.tap <= 0 || r.tile < 0) {
        // Noise: all of the larger call's time on its taps.
        r.tap = perTile[1] / taps[1];
        r.tile = 0;
      }
      r.narrowTap = std::max(perTile[2] - r.tile, 0.5 * perTile[2]) / taps[2];
    } else {
      // More threads: one thread's rates scaled by the median of the
      // probes' slowdowns. Fitting the line again at two threads on this
      // machine gave per-tile times from 26 to 308 ns in three runs (its
      // second core comes and goes); the median slowdown is steadier.
      const ConvRates &one = rates.front();
      std::vector<double> slowdown;
      for (int i = 0; i < 3; ++i)
        slowdown.push_back(
            perTile[i] /
            ((i == 2 ? one.narrowTap : one.tap) * taps[i] + one.tile));
      double k = median(slowdown);
      r.tap = one.tap * k;
      r.narrowTap = one.narrowTap * k;
      r.tile = one.tile * k;
    }
    rates.push_back(r);
    progress("direct convolution, %d thread%s: %.2f ns per tap (%.2f on "
             "narrow tiles), %.1f ns per tile",
             t, t == 1 ? "" : "s", r.tap * 1e9, r.narrowTap * 1e9,
             r.tile * 1e9);
  }
  return true;
}

} // namespace calibrate
