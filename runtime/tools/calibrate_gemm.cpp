//===- calibrate_gemm.cpp - GEMM throughput for dist-calibrate ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Times the runtime's GEMM entry points (dist_rt_gemm_set_f32/f64, C = A *
// B, as generated code calls them for products without a bias): square
// products per data type, thread count and size, and, for f32, a grid of
// m x n x k shapes in three operand layouts at one thread and at the most
// threads, which the cost model interpolates for a model's products.
//
//===----------------------------------------------------------------------===//

#include "calibrate.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <utility>
#include <vector>

namespace calibrate {
namespace {

/// C (m x n) += A * B in layout `layout` (an index into kLayouts), one
/// batch.
template <typename T>
void runGemm(GemmFn gemm, int64_t m, int64_t n, int64_t k, int layout,
             const T *a, const T *b, T *c) {
  bool ta = layout == 2, tb = layout == 1;
  gemm(/*batch=*/1, m, n, k, int64_t(intptr_t(a)), /*a_sb=*/0,
       /*a_sm=*/ta ? 1 : k, /*a_sk=*/ta ? m : 1, int64_t(intptr_t(b)),
       /*b_sk=*/tb ? 1 : n, /*b_sn=*/tb ? k : 1, int64_t(intptr_t(c)),
       /*c_sb=*/0, /*c_sm=*/n, /*c_sn=*/1, /*b_sb=*/0);
}

/// Median FLOP/s of m x n x k products in `layout` at the current thread
/// count.
template <typename T>
double measureGemm(GemmFn gemm, int64_t m, int64_t n, int64_t k, int layout,
                   const T *a, const T *b, T *c, double minTimeS) {
  // C starts finite (the set variants never read it; a GEMM that adds
  // would grow it linearly, never overflowing here).
  std::fill(c, c + m * n, T(0));
  double seconds = secondsPerCall(
      [&] { runGemm(gemm, m, n, k, layout, a, b, c); }, minTimeS);
  return 2.0 * double(m) * double(n) * double(k) / seconds;
}

} // namespace

template <typename T>
bool measureGemmType(const char *dtype, GemmFn gemm,
                     const std::vector<int64_t> &sizes, int32_t threadsMax,
                     double minTimeS, std::vector<GemmSeries> &out) {
  int64_t maxSize = *std::max_element(sizes.begin(), sizes.end());
  size_t count = size_t(maxSize) * size_t(maxSize);
  RuntimeBuffer a(count * sizeof(T)), b(count * sizeof(T)),
      c(count * sizeof(T));
  if (!a || !b || !c)
    return false;
  fillPseudoRandom(a.as<T>(), count, 1);
  fillPseudoRandom(b.as<T>(), count, 2);

  for (int32_t threads = 1; threads <= threadsMax; ++threads) {
    dist_rt_set_num_threads(threads);
    GemmSeries series{threads, {}};
    for (int64_t n : sizes) {
      double flops = measureGemm<T>(gemm, n, n, n, /*layout=*/0, a.as<T>(),
                                    b.as<T>(), c.as<T>(), minTimeS);
      progress("gemm %s %" PRId64 " threads %d: %.1f GFLOP/s", dtype, n,
               threads, flops * 1e-9);
      series.flopsBySize.emplace_back(n, flops);
    }
    out.push_back(std::move(series));
  }
  return true;
}

template <typename T>
bool measureGemmShapes(
    const char *dtype, GemmFn gemm, const std::vector<int64_t> &dims,
    const std::vector<int64_t> &unalignedDims, int32_t threadsMax,
    double minTimeS, int passes,
    std::vector<std::pair<int32_t, std::vector<ShapePoint>>> &out) {
  int64_t maxDim =
      std::max(*std::max_element(dims.begin(), dims.end()),
               *std::max_element(unalignedDims.begin(), unalignedDims.end()));
  size_t count = size_t(maxDim) * size_t(maxDim);
  RuntimeBuffer a(count * sizeof(T)), b(count * sizeof(T)),
      c(count * sizeof(T));
  if (!a || !b || !c)
    return false;
  fillPseudoRandom(a.as<T>(), count, 3);
  fillPseudoRandom(b.as<T>(), count, 4);
  std::vector<int32_t> threadCounts = {1};
  if (threadsMax > 1)
    threadCounts.push_back(threadsMax);
  // The points of one thread count, in the order they are measured and
  // written.
  std::vector<ShapePoint> grid;
  for (int layout = 0; layout < 3; ++layout)
    for (const std::vector<int64_t> *set : {&dims, &unalignedDims})
      for (int64_t m : *set)
        for (int64_t n : *set)
          for (int64_t k : *set)
            grid.push_back({layout, m, n, k, 0});
  out.clear();
  for (int32_t threads : threadCounts)
    out.emplace_back(threads, grid);
  size_t total = size_t(passes) * threadCounts.size() * grid.size(), done = 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (auto &[threads, points] : out) {
      dist_rt_set_num_threads(threads);
      for (ShapePoint &p : points) {
        p.flops = std::max(
            p.flops, measureGemm<T>(gemm, p.m, p.n, p.k, p.layout, a.as<T>(),
                                    b.as<T>(), c.as<T>(), minTimeS));
        if (++done % (grid.size() / 3) == 0)
          progress("gemm %s shapes %s threads %d: %zu of %zu", dtype,
                   kLayouts[p.layout], threads, done, total);
      }
    }
  }
  return true;
}

// The instantiations main() uses.
template bool measureGemmType<float>(const char *dtype, GemmFn gemm,
                                     const std::vector<int64_t> &sizes,
                                     int32_t threadsMax, double minTimeS,
                                     std::vector<GemmSeries> &out);
template bool measureGemmType<double>(const char *dtype, GemmFn gemm,
                                      const std::vector<int64_t> &sizes,
                                      int32_t threadsMax, double minTimeS,
                                      std::vector<GemmSeries> &out);
template bool measureGemmShapes<float>(
    const char *dtype, GemmFn gemm, const std::vector<int64_t> &dims,
    const std::vector<int64_t> &unalignedDims, int32_t threadsMax,
    double minTimeS, int passes,
    std::vector<std::pair<int32_t, std::vector<ShapePoint>>> &out);

} // namespace calibrate
