//===- calibrate_memory.cpp - Memory rates for dist-calibrate -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Times the memory-bound loops of a model's step through the runtime's
// thread pool (dist_rt_parallel_for): a STREAM triad for the streaming
// bandwidth per thread count, and the in-place AdamW update that codegen
// emits for each parameter, per footprint and thread count. main() runs
// each a few times spread over the calibration and keeps the median pass.
//
//===----------------------------------------------------------------------===//

#include "calibrate.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace calibrate {

//===----------------------------------------------------------------------===//
// Memory bandwidth
//===----------------------------------------------------------------------===//

namespace {

/// Runs of each triad and in-place measurement (at least), keeping the best.
constexpr int kTriadRuns = 5;

/// The triad a[i] = b[i] + scalar * c[i].
struct TriadArgs {
  float *a;
  const float *b;
  const float *c;
  float scalar;
};

void triadChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const TriadArgs *>(ctx);
  float *__restrict a = args.a;
  const float *__restrict b = args.b;
  const float *__restrict c = args.c;
  float scalar = args.scalar;
  for (int64_t i = begin; i < end; ++i)
    a[i] = b[i] + scalar * c[i];
}

/// Fills the three arrays; run on the pool so that pages are first touched
/// by the threads that later stream them.
void triadInitChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const TriadArgs *>(ctx);
  float *b = const_cast<float *>(args.b);
  float *c = const_cast<float *>(args.c);
  for (int64_t i = begin; i < end; ++i) {
    args.a[i] = 0.0f;
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
}

} // namespace

bool measureBandwidth(size_t arrayBytes, int32_t threadsMax,
                      std::vector<PassFigures> &out) {
  RuntimeBuffer a(arrayBytes), b(arrayBytes), c(arrayBytes);
  if (!a || !b || !c)
    return false;
  auto n = int64_t(arrayBytes / sizeof(float));
  TriadArgs args{a.as<float>(), b.as<float>(), c.as<float>(), 3.0f};
  dist_rt_set_num_threads(threadsMax);
  dist_rt_parallel_for(n, triadInitChunk, &args);

  for (int32_t threads = 1; threads <= threadsMax; ++threads) {
    dist_rt_set_num_threads(threads);
    dist_rt_parallel_for(n, triadChunk, &args); // warm-up
    double bestS = 1e30;
    for (int run = 0; run < kTriadRuns; ++run) {
      auto start = Clock::now();
      dist_rt_parallel_for(n, triadChunk, &args);
      clobberMemory();
      bestS = std::min(bestS, std::max(secondsSince(start), 1e-9));
    }
    double bytesPerS = 3.0 * double(n) * sizeof(float) / bestS;
    progress("memory bandwidth threads %d: %.1f GB/s", threads,
             bytesPerS * 1e-9);
    if (out.size() < size_t(threads))
      out.push_back({double(threads), {}});
    out[threads - 1].values.push_back(bytesPerS);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// In-place update
//===----------------------------------------------------------------------===//

namespace {

/// The arrays of an in-place optimizer update: parameter, gradient and the
/// two Adam moments.
struct InPlaceArgs {
  float *param;
  const float *grad;
  float *m;
  float *v;
};

/// One AdamW step over [begin, end): reads four arrays and rewrites three
/// where it read them, as the fused update loop codegen emits for each
/// parameter does. Cloned for AVX-512 because generated loops use the
/// host's full vector width; a baseline x86-64 build of this loop (SSE2)
/// ran at 14 GB/s on the 2-core EPYC, arithmetic-bound, where the
/// generated DLRM table updates stream at 60-70 GB/s.
__attribute__((target_clones("avx512f", "default"))) void
inPlaceChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const InPlaceArgs *>(ctx);
  float *__restrict p = args.param;
  const float *__restrict g = args.grad;
  float *__restrict m = args.m;
  float *__restrict v = args.v;
  for (int64_t i = begin; i < end; ++i) {
    float gi = g[i];
    float mi = 0.9f * m[i] + 0.1f * gi;
    float vi = 0.999f * v[i] + 0.001f * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * 0.99999f - 1e-3f * mi / (__builtin_sqrtf(vi) + 1e-8f);
  }
}

void inPlaceInitChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const InPlaceArgs *>(ctx);
  float *g = const_cast<float *>(args.grad);
  for (int64_t i = begin; i < end; ++i) {
    args.param[i] = 1.0f;
    g[i] = 1e-3f * float(i % 1000);
    args.m[i] = 0.0f;
    args.v[i] = 0.0f;
  }
}

} // namespace

bool measureInPlace(
    const std::vector<size_t> &footprints, int32_t threadsMax, double minTimeS,
    std::vector<std::pair<int32_t, std::vector<PassFigures>>> &out) {
  if (out.empty()) {
    for (int32_t threads = 1; threads < threadsMax; threads *= 2)
      out.push_back({threads, {}});
    out.push_back({threadsMax, {}});
  }
  for (size_t f = 0; f < footprints.size(); ++f) {
    size_t footprint = footprints[f];
    size_t arrayBytes = std::max<size_t>(footprint / 4, 4096);
    RuntimeBuffer p(arrayBytes), g(arrayBytes), m(arrayBytes), v(arrayBytes);
    if (!p || !g || !m || !v)
      return false;
    auto n = int64_t(arrayBytes / sizeof(float));
    InPlaceArgs args{p.as<float>(), g.as<float>(), m.as<float>(),
                     v.as<float>()};
    dist_rt_set_num_threads(threadsMax);
    dist_rt_parallel_for(n, inPlaceInitChunk, &args);
    double bytes = 7.0 * double(n) * sizeof(float);
    for (auto &[threads, points] : out) {
      dist_rt_set_num_threads(threads);
      dist_rt_parallel_for(n, inPlaceChunk, &args); // warm-up
      double bestS = 1e30, spentS = 0;
      for (int run = 0; run < kTriadRuns || spentS < minTimeS; ++run) {
        auto start = Clock::now();
        dist_rt_parallel_for(n, inPlaceChunk, &args);
        clobberMemory();
        double s = std::max(secondsSince(start), 1e-9);
        bestS = std::min(bestS, s);
        spentS += s;
      }
      if (points.size() == f)
        points.push_back({4.0 * double(arrayBytes), {}});
      points[f].values.push_back(bytes / bestS);
      progress("in-place update %zu KiB threads %d: %.1f GB/s",
               4 * arrayBytes / 1024, threads, bytes / bestS * 1e-9);
    }
  }
  return true;
}

} // namespace calibrate
