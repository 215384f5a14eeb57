//===- GemmTest.cpp - Tests for dist_rt_gemm_f32/f64 ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for the strided batched gemm: every case is checked
// against a naive double-precision loop, for plain, transposed, padded,
// fully strided (packed) and column-major-C layouts, batches, broadcast
// batch strides (0) and degenerate sizes. Every case runs twice: on
// OpenBLAS when it can be loaded, and on the built-in loops (forced through
// the runtime's internal switch, which is why this test links the static
// runtime).
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"

#include "RuntimeTestUtils.h"
#include "internal.h"

#include <gtest/gtest.h>

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dist_rt_test;

namespace {

/// Element strides of one operand: batch, row, column.
struct Layout {
  int64_t batch;
  int64_t row;
  int64_t col;
};

/// One gemm call.
struct GemmCase {
  const char *name;
  int64_t batch, m, n, k;
  Layout a, b, c;
};

/// Number of elements a buffer needs for `batch` matrices of rows x cols
/// with non-negative strides.
size_t spanOf(int64_t batch, int64_t rows, int64_t cols, const Layout &l) {
  if (batch == 0 || rows == 0 || cols == 0)
    return 1;
  return static_cast<size_t>((batch - 1) * l.batch + (rows - 1) * l.row +
                             (cols - 1) * l.col + 1);
}

/// Deterministic values in [-1, 1).
template <typename T>
void fill(std::vector<T> &values, uint32_t seed) {
  uint32_t state = seed * 2654435761u + 1;
  for (T &value : values) {
    state = state * 1664525u + 1013904223u;
    value =
        static_cast<T>(static_cast<double>(state >> 8) / (1 << 24) * 2.0 - 1.0);
  }
}

/// Calls dist_rt_gemm_f32/f64, or dist_rt_gemm_set_f32/f64 (C = A * B)
/// when `overwrite`.
template <typename T>
void callGemm(const GemmCase &c, const T *a, const T *b, T *out,
              bool overwrite);

template <>
void callGemm<float>(const GemmCase &c, const float *a, const float *b,
                     float *out, bool overwrite) {
  (overwrite ? dist_rt_gemm_set_f32 : dist_rt_gemm_f32)(
      c.batch, c.m, c.n, c.k, asInt(a), c.a.batch, c.a.row, c.a.col, asInt(b),
      c.b.row, c.b.col, asInt(out), c.c.batch, c.c.row, c.c.col, c.b.batch);
}

template <>
void callGemm<double>(const GemmCase &c, const double *a, const double *b,
                      double *out, bool overwrite) {
  (overwrite ? dist_rt_gemm_set_f64 : dist_rt_gemm_f64)(
      c.batch, c.m, c.n, c.k, asInt(a), c.a.batch, c.a.row, c.a.col, asInt(b),
      c.b.row, c.b.col, asInt(out), c.c.batch, c.c.row, c.c.col, c.b.batch);
}

/// Runs `c` and compares every element of the C buffer (including the ones
/// the case must not touch) with a naive loop. `overwrite`: through
/// dist_rt_gemm_set_*, so every element of a C matrix starts at 0 (products
/// of batches that share one C sum).
template <typename T>
void checkCase(const GemmCase &c, bool overwrite = false) {
  SCOPED_TRACE(c.name);
  SCOPED_TRACE(overwrite ? "C = A * B" : "C += A * B");
  std::vector<T> a(spanOf(c.batch, c.m, c.k, c.a));
  std::vector<T> b(spanOf(c.batch, c.k, c.n, c.b));
  std::vector<T> out(spanOf(c.batch, c.m, c.n, c.c) + 5);
  fill(a, 1);
  fill(b, 2);
  fill(out, 3);

  std::vector<double> expected(out.begin(), out.end());
  std::vector<double> magnitude(out.size(), 0.0);
  if (overwrite)
    for (int64_t t = 0; t < c.batch; ++t)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j)
          expected[static_cast<size_t>(t * c.c.batch + i * c.c.row +
                                       j * c.c.col)] = 0;
  for (int64_t t = 0; t < c.batch; ++t)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        size_t at =
            static_cast<size_t>(t * c.c.batch + i * c.c.row + j * c.c.col);
        for (int64_t p = 0; p < c.k; ++p) {
          double term = static_cast<double>(a[static_cast<size_t>(
                            t * c.a.batch + i * c.a.row + p * c.a.col)]) *
                        static_cast<double>(b[static_cast<size_t>(
                            t * c.b.batch + p * c.b.row + j * c.b.col)]);
          expected[at] += term;
          magnitude[at] += std::fabs(term);
        }
      }

  callGemm<T>(c, a.data(), b.data(), out.data(), overwrite);
  // A few units in the last place per accumulated term.
  double epsilon = sizeof(T) == 4 ? 2e-7 : 4e-16;
  for (size_t i = 0; i < out.size(); ++i) {
    double tolerance = epsilon * (4 + static_cast<double>(c.k)) *
                       (1 + magnitude[i] + std::fabs(expected[i]));
    ASSERT_NEAR(static_cast<double>(out[i]), expected[i], tolerance)
        << "element " << i;
  }
}

/// The cases, with m = 5, n = 7, k = 6 unless a case needs otherwise.
std::vector<GemmCase> gemmCases() {
  const int64_t m = 5, n = 7, k = 6;
  return {
      {"row-major", 1, m, n, k, {0, k, 1}, {0, n, 1}, {0, n, 1}},
      {"transposed A", 1, m, n, k, {0, 1, m}, {0, n, 1}, {0, n, 1}},
      {"transposed B", 1, m, n, k, {0, k, 1}, {0, 1, k}, {0, n, 1}},
      {"both transposed", 1, m, n, k, {0, 1, m}, {0, 1, k}, {0, n, 1}},
      {"padded leading dims",
       1,
       m,
       n,
       k,
       {0, k + 3, 1},
       {0, n + 1, 1},
       {0, n + 2, 1}},
      {"strided A and B (packed)",
       1,
       m,
       n,
       k,
       {0, 2 * k, 2},
       {0, 3, 3 * k},
       {0, n, 1}},
      {"column-major C", 1, m, n, k, {0, k, 1}, {0, n, 1}, {0, 1, m}},
      {"strided C (packed)", 1, m, n, k, {0, k, 1}, {0, n, 1}, {0, 2 * n, 2}},
      {"batched", 3, m, n, k, {m * k, k, 1}, {k * n, n, 1}, {m * n, n, 1}},
      {"batched transposed",
       4,
       m,
       n,
       k,
       {m * k, 1, m},
       {k * n, 1, k},
       {m * n, n, 1}},
      {"broadcast A", 3, m, n, k, {0, k, 1}, {k * n, n, 1}, {m * n, n, 1}},
      {"broadcast B", 3, m, n, k, {m * k, k, 1}, {0, n, 1}, {m * n, n, 1}},
      {"broadcast B with padding between batches",
       2,
       m,
       n,
       k,
       {m * k + 9, k, 1},
       {0, 1, k},
       {m * n + 4, n, 1}},
      {"accumulating batches into one C",
       3,
       m,
       n,
       k,
       {m * k, k, 1},
       {k * n, n, 1},
       {0, n, 1}},
      // A product per head written into [T, H, D]: the batches interleave
      // within C's rows without sharing an element.
      {"batches interleaved within rows",
       3,
       m,
       n,
       k,
       {m * k, k, 1},
       {k * n, n, 1},
       {n, 3 * n, 1}},
      // Batches whose C matrices partly overlap: every element gets the sum
      // of the products that write it.
      {"partly overlapping batches",
       3,
       m,
       n,
       k,
       {m * k, k, 1},
       {k * n, n, 1},
       {2, n, 1}},
      {"many small batches (thread pool)",
       37,
       4,
       3,
       5,
       {20, 5, 1},
       {15, 3, 1},
       {12, 3, 1}},
      {"vector times matrix", 1, 1, n, k, {0, 99, 1}, {0, n, 1}, {0, 77, 1}},
      {"matrix times vector", 1, m, 1, k, {0, k, 1}, {0, 1, 13}, {0, 1, 55}},
      // One row or column: the library's gemv (gemvOne), each layout.
      {"vector times transposed matrix",
       1,
       1,
       n,
       k,
       {0, 99, 1},
       {0, 1, k + 2},
       {0, 77, 1}},
      {"strided vector times matrix",
       1,
       1,
       n,
       k,
       {0, 99, 3},
       {0, n, 1},
       {0, 77, 1}},
      {"transposed matrix times vector",
       1,
       m,
       1,
       k,
       {0, 1, m + 1},
       {0, 2, 1},
       {0, 3, 1}},
      {"matrix times vector, both unit strides",
       1,
       m,
       1,
       k,
       {0, k, 1},
       {0, 1, 1},
       {0, 1, 1}},
      {"row vectors of a batch not folded",
       3,
       1,
       n,
       k,
       {k + 1, 99, 1},
       {k * n, n, 1},
       {n + 2, 77, 1}},
      {"a classifier's head (cut by columns)",
       1,
       1,
       1000,
       640,
       {0, 640, 1},
       {0, 1, 640},
       {0, 1000, 1}},
      {"outer product", 1, m, n, 1, {0, 1, 31}, {0, n, 1}, {0, n, 1}},
      {"1x1x1", 1, 1, 1, 1, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {"k = 0 leaves C alone", 2, m, n, 0, {0, 1, 1}, {0, 1, 1}, {m * n, n, 1}},
      {"m = 0", 1, 0, n, k, {0, k, 1}, {0, n, 1}, {0, n, 1}},
      {"batch = 0", 0, m, n, k, {0, k, 1}, {0, n, 1}, {0, n, 1}},
      // Products big enough to be cut into slices of C for the pool.
      {"one product cut by rows",
       1,
       200,
       40,
       64,
       {0, 64, 1},
       {0, 40, 1},
       {0, 40, 1}},
      {"one product cut by columns, column-major C",
       1,
       40,
       200,
       64,
       {0, 1, 40},
       {0, 200, 1},
       {0, 1, 40}},
      {"products accumulating into one C, each cut",
       3,
       96,
       80,
       64,
       {96 * 64, 64, 1},
       {64 * 80, 80, 1},
       {0, 80, 1}},
      {"shared weight, batches stacked into one product",
       4,
       m,
       n,
       k,
       {m * k, k, 1},
       {0, n, 1},
       {m * n, n, 1}},
      // ViT's attention input projection: [B, 1, K] rows read through a
      // transposing view (the row stride, of a dimension of extent 1, is
      // not the batch stride) by a shared weight.
      {"shared weight, one row per batch through a view",
       6,
       1,
       n,
       k,
       {k, 6 * k, 1},
       {0, n, 1},
       {n, 6 * n, 1}},
      {"shared weight, A read transposed, batches stacked",
       3,
       m,
       n,
       k,
       {m, 1, 3 * m},
       {0, n, 1},
       {m * n, n, 1}},
      {"shared A, batches stacked into columns",
       4,
       m,
       n,
       k,
       {0, k, 1},
       {n, 4 * n, 1},
       {n, 4 * n, 1}},
      {"shared weight, one row per batch, summed into one C row",
       4,
       1,
       n,
       k,
       {k, 4 * k, 1},
       {0, n, 1},
       {0, n, 1}},
      // ViT at batch 8: [197, 8, K] rows, a view of [8, 197, K], by a
      // shared weight: rows gathered into one product, C scattered back.
      {"shared weight, rows strided across batches (gathered)",
       3,
       2,
       n,
       k,
       {k, 3 * k, 1},
       {0, n, 1},
       {2 * n, n, 1}},
      {"shared A, columns strided across batches (gathered)",
       3,
       n,
       2,
       k,
       {0, k, 1},
       {1, 2 * 3, 3},
       {n * 2, 2, 1}},
      {"shared weight, gathered, C column-major per batch",
       4,
       2,
       n,
       k,
       {k, 4 * k, 1},
       {0, 1, k},
       {2 * n, 1, 2}},
      {"shared weight, batches with gaps (not stacked)",
       3,
       m,
       n,
       k,
       {m * k + 2, k, 1},
       {0, 1, k},
       {m * n + 5, n, 1}},
      // At least 2^20 multiply-adds per product (per slice of C at two
      // threads): oneDNN's sgemm when libdnnl.so.2 loads (blas.cpp).
      {"oneDNN-sized, row-major",
       1,
       256,
       128,
       64,
       {0, 64, 1},
       {0, 128, 1},
       {0, 128, 1}},
      {"oneDNN-sized, both transposed, padded C",
       1,
       256,
       128,
       64,
       {0, 1, 256},
       {0, 1, 64},
       {0, 130, 1}},
      {"oneDNN-sized, transposed B, column-major C",
       1,
       128,
       256,
       64,
       {0, 64, 1},
       {0, 1, 64},
       {0, 1, 128}},
      {"larger (BLAS threads)",
       2,
       130,
       70,
       150,
       {130 * 150, 150, 1},
       {0, 1, 150},
       {130 * 70, 70, 1}},
  };
}

/// Runs every case on one backend.
class GemmTest : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override { dist_rt::setForceBuiltinGemm(GetParam()); }
  void TearDown() override { dist_rt::setForceBuiltinGemm(false); }
};

TEST_P(GemmTest, Float32MatchesNaiveLoop) {
  for (const GemmCase &c : gemmCases())
    checkCase<float>(c);
}

TEST_P(GemmTest, Float64MatchesNaiveLoop) {
  for (const GemmCase &c : gemmCases())
    checkCase<double>(c);
}

// C = A * B: C's old values are never read (here: random, NaN below), k = 0
// clears C, and batches that accumulate into one C start it at zero.
TEST_P(GemmTest, OverwritingMatchesNaiveLoop) {
  for (const GemmCase &c : gemmCases()) {
    checkCase<float>(c, /*overwrite=*/true);
    checkCase<double>(c, /*overwrite=*/true);
  }
  std::vector<float> a = {1, 2, 3, 4}, b = {1, 0, 0, 1};
  std::vector<float> out(4, std::nanf(""));
  dist_rt_gemm_set_f32(1, 2, 2, 2, asInt(a.data()), 0, 2, 1, asInt(b.data()), 2,
                       1, asInt(out.data()), 0, 2, 1, 0);
  EXPECT_EQ(out, a);
}

TEST_P(GemmTest, ThreadCountsDoNotChangeResults) {
  int32_t saved = dist_rt_get_num_threads();
  for (int32_t threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(threads);
    dist_rt_set_num_threads(threads);
    for (const GemmCase &c : gemmCases()) {
      checkCase<float>(c);
      checkCase<float>(c, /*overwrite=*/true);
    }
  }
  dist_rt_set_num_threads(saved);
}

INSTANTIATE_TEST_SUITE_P(Backends, GemmTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return std::string(info.param ? "Builtin"
                                                         : "OpenBLAS");
                         });

/// A weight in constant memory read transposed: the product uses a cached
/// untransposed copy, made once, gives the same result, and the copy goes
/// with the memory; writable memory is never copied.
TEST(GemmConstantWeights, TransposedConstantWeightIsCopiedOnce) {
  const int64_t m = 9, n = 33, k = 17, ld = 20; // B stored [n, ld], ld >= k
  std::vector<float> a(m * k), w(n * ld), out(m * n), want(m * n, 0.0f);
  fill(a, 4);
  fill(w, 5);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(a[i * k + p]) * double(w[j * ld + p]);
      want[i * n + j] = static_cast<float>(sum);
    }
  auto run = [&] {
    std::fill(out.begin(), out.end(), 0.0f);
    dist_rt_gemm_f32(1, m, n, k, asInt(a.data()), 0, k, 1, asInt(w.data()), 1,
                     ld, asInt(out.data()), 0, n, 1, 0);
    for (int64_t i = 0; i < m * n; ++i)
      ASSERT_NEAR(out[i], want[i], 1e-5) << "element " << i;
  };
  size_t before = dist_rt::constantCopyBytes();
  // Writable memory: no copy.
  run();
  EXPECT_EQ(dist_rt::constantCopyBytes(), before);
  // Constant memory: one copy of k x n floats, reused by the next call (a
  // product this small stays on the libraries, so it is not packed).
  size_t copy = size_t(k * n) * sizeof(float);
  dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
  run();
  EXPECT_EQ(dist_rt::constantCopyBytes(), before + copy);
  run();
  EXPECT_EQ(dist_rt::constantCopyBytes(), before + copy);
  // The copy goes with the range; the memory is writable again.
  dist_rt::unregisterConstantMemory(w.data());
  EXPECT_EQ(dist_rt::constantCopyBytes(), before);
  for (float &x : w)
    x = -x;
  for (float &x : want)
    x = -x;
  run();
}

// Products on a constant f32 weight run on its packed copy on hosts with
// AVX2 and FMA or AVX-512 (sgemm_packed.cpp: tiles of 6 x 16 or 8 x 48):
// edges of rows and columns, depths over one slice (256), rows over one
// block (at most 256), strided
// A and C, the weight plain or transposed, set or added, one and two
// threads, all against a double-precision loop. Elsewhere the libraries
// run them and the same sums hold.
TEST(GemmConstantWeights, PackedWeightsGiveTheSums) {
  int32_t saved = dist_rt_get_num_threads();
  bool packs = dist_rt::packedSgemmAvailable();
  // Small products too (they stay on the libraries by default), until the
  // test ends however it ends.
  dist_rt::PackedGemmMinWorkScope allProducts(0);
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 16, 16},   {5, 33, 17},   {6, 48, 300},
                          {7, 100, 64},  {13, 17, 513}, {197, 64, 40},
                          {300, 20, 30}, {400, 40, 20}, {260, 144, 515}};
  for (const Shape &s : shapes)
    for (bool transposed : {false, true})
      for (bool overwrite : {false, true})
        for (int32_t threads : {1, 2}) {
          SCOPED_TRACE(testing::Message() << s.m << "x" << s.n << "x" << s.k
                                          << (transposed ? " B^T" : "")
                                          << (overwrite ? " set" : " add")
                                          << " threads " << threads);
          dist_rt_set_num_threads(threads);
          // A's and C's rows padded by 3; B stored k x n or n x k.
          int64_t lda = s.k + 3, ldc = s.n + 3;
          std::vector<float> a(size_t(s.m * lda)), w(size_t(s.k * s.n)),
              c(size_t(s.m * ldc));
          fill(a, uint32_t(s.m + s.n));
          fill(w, uint32_t(s.k));
          fill(c, 9);
          int64_t bSk = transposed ? 1 : s.n, bSn = transposed ? s.k : 1;
          std::vector<double> want(c.begin(), c.end());
          for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = 0; j < s.n; ++j) {
              double sum = overwrite ? 0.0 : want[size_t(i * ldc + j)];
              for (int64_t p = 0; p < s.k; ++p)
                sum += double(a[size_t(i * lda + p)]) *
                       double(w[size_t(p * bSk + j * bSn)]);
              want[size_t(i * ldc + j)] = sum;
            }
          dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
          int64_t before = dist_rt::packedGemmCalls();
          (overwrite ? dist_rt_gemm_set_f32 : dist_rt_gemm_f32)(
              1, s.m, s.n, s.k, asInt(a.data()), 0, lda, 1, asInt(w.data()),
              bSk, bSn, asInt(c.data()), 0, ldc, 1, 0);
          EXPECT_EQ(dist_rt::packedGemmCalls() - before, packs ? 1 : 0);
          dist_rt::unregisterConstantMemory(w.data());
          for (size_t i = 0; i < c.size(); ++i)
            ASSERT_NEAR(c[i], want[i], 1e-5 * std::sqrt(double(s.k)))
                << "element " << i;
        }
  // Writable weights are never packed; nor are products of more than 512
  // rows (the libraries run those as fast).
  std::vector<float> a(600 * 64), w(64 * 64), c(600 * 64);
  int64_t before = dist_rt::packedGemmCalls();
  dist_rt_gemm_set_f32(1, 64, 64, 64, asInt(a.data()), 0, 64, 1,
                       asInt(w.data()), 64, 1, asInt(c.data()), 0, 64, 1, 0);
  EXPECT_EQ(dist_rt::packedGemmCalls(), before);
  dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
  dist_rt_gemm_set_f32(1, 600, 64, 64, asInt(a.data()), 0, 64, 1,
                       asInt(w.data()), 64, 1, asInt(c.data()), 0, 64, 1, 0);
  EXPECT_EQ(dist_rt::packedGemmCalls(), before);
  dist_rt_gemm_set_f32(1, 512, 64, 64, asInt(a.data()), 0, 64, 1,
                       asInt(w.data()), 64, 1, asInt(c.data()), 0, 64, 1, 0);
  EXPECT_EQ(dist_rt::packedGemmCalls(), before + (packs ? 1 : 0));
  // By default, products of fewer than 2^20 multiply-adds stay on the
  // libraries.
  dist_rt::setPackedGemmMinWork(int64_t(1) << 20);
  dist_rt_gemm_set_f32(1, 255, 64, 64, asInt(a.data()), 0, 64, 1,
                       asInt(w.data()), 64, 1, asInt(c.data()), 0, 64, 1, 0);
  EXPECT_EQ(dist_rt::packedGemmCalls(), before + (packs ? 1 : 0));
  dist_rt_gemm_set_f32(1, 256, 64, 64, asInt(a.data()), 0, 64, 1,
                       asInt(w.data()), 64, 1, asInt(c.data()), 0, 64, 1, 0);
  EXPECT_EQ(dist_rt::packedGemmCalls(), before + (packs ? 2 : 0));
  dist_rt::unregisterConstantMemory(w.data());
  RecordProperty("packed", packs ? "yes" : "no");
  dist_rt_set_num_threads(saved);
}

// A product of one row on a constant weight of 2^22 elements or more (16
// MiB, read from memory at every call: AlexNet's classifier) runs on the
// library's gemv, not on a packed copy (packed without a library); one row
// on a smaller weight still packs. Either layout of the weight, the sums
// checked.
TEST(GemmConstantWeights, OneRowOnALargeWeightRunsOnGemv) {
  bool packs =
      dist_rt::packedSgemmAvailable() && !std::getenv("DIST_RT_NO_PACKED_GEMM");
  bool library = !dist_rt::blasCoreName().empty();
  dist_rt::PackedGemmMinWorkScope work(0, 0);
  for (int64_t k : {int64_t(1024), int64_t(256)})
    for (bool transposed : {false, true}) {
      const int64_t n = 4096;
      SCOPED_TRACE(testing::Message()
                   << "1x" << n << "x" << k << (transposed ? " B^T" : ""));
      std::vector<float> a(static_cast<size_t>(k)), w(size_t(k * n)),
          c(static_cast<size_t>(n));
      fill(a, 3);
      fill(w, 4);
      int64_t bSk = transposed ? 1 : n, bSn = transposed ? k : 1;
      dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
      int64_t packedBefore = dist_rt::packedGemmCalls(),
              gemvBefore = dist_rt::gemvGemmCalls();
      dist_rt_gemm_set_f32(1, 1, n, k, asInt(a.data()), 0, k, 1,
                           asInt(w.data()), bSk, bSn, asInt(c.data()), 0, n, 1,
                           0);
      bool large = k * n >= (int64_t(1) << 22);
      EXPECT_EQ(dist_rt::packedGemmCalls() - packedBefore,
                packs && (!large || !library) ? 1 : 0);
      if (large && library)
        EXPECT_GE(dist_rt::gemvGemmCalls() - gemvBefore, 1);
      dist_rt::unregisterConstantMemory(w.data());
      for (int64_t j : {int64_t(0), n / 3, n - 1}) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += double(a[size_t(p)]) * double(w[size_t(p * bSk + j * bSn)]);
        ASSERT_NEAR(c[size_t(j)], sum, 1e-4) << j;
      }
    }
}

// Which products run on packed weights by default: on AVX-512 only those
// of 1536 columns or more (oneDNN is as fast or faster on narrower ones,
// see packedMinColumns in blas.cpp), on AVX2 every width; the sums hold
// either way.
TEST(GemmConstantWeights, PackedByWidthOnAvx512) {
  const int64_t m = 64, k = 96;
  bool packs =
      dist_rt::packedSgemmAvailable() && !std::getenv("DIST_RT_NO_PACKED_GEMM");
  bool wideOnly = dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512;
  for (int64_t n :
       {int64_t(768), int64_t(1535), int64_t(1536), int64_t(2304)}) {
    SCOPED_TRACE(testing::Message() << m << "x" << n << "x" << k);
    std::vector<float> a(size_t(m * k)), w(size_t(k * n)), c(size_t(m * n));
    fill(a, uint32_t(n));
    fill(w, uint32_t(n + 1));
    // Small products too, the default width rule kept.
    int64_t columns = dist_rt::setPackedGemmMinColumns(0);
    dist_rt::setPackedGemmMinColumns(columns);
    dist_rt::PackedGemmMinWorkScope work(0, columns);
    dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
    int64_t before = dist_rt::packedGemmCalls();
    dist_rt_gemm_set_f32(1, m, n, k, asInt(a.data()), 0, k, 1, asInt(w.data()),
                         n, 1, asInt(c.data()), 0, n, 1, 0);
    bool want = packs && (!wideOnly || n >= 1536);
    EXPECT_EQ(dist_rt::packedGemmCalls() - before, want ? 1 : 0);
    dist_rt::unregisterConstantMemory(w.data());
    for (int64_t i : {int64_t(0), m / 2, m - 1})
      for (int64_t j : {int64_t(0), n / 3, n - 1}) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += double(a[size_t(i * k + p)]) * double(w[size_t(p * n + j)]);
        ASSERT_NEAR(c[size_t(i * n + j)], sum, 1e-4) << i << ", " << j;
      }
  }
}

// Products whose A is a constant (a convolution's filters times its
// columns) run on A packed once on hosts with AVX2 and FMA or AVX-512:
// edges of rows (tiles of 6 on AVX2, 8 on AVX-512) and columns (panels of
// 16 and 8; of 48, 32 and 16 on AVX-512, whose full panels the first tiles
// of a block pack as they read them, and last panels of 1, 2, 4, 8 and 15
// columns or fewer, 16 rows at a time), depths over one slice (256), rows
// over one block, shallow depths (row-major tile order), B's and C's rows
// padded, A plain or transposed, set or added, one and two threads, all
// against a double-precision loop. Writable filters stay on the libraries.
TEST(GemmConstantWeights, PackedFiltersGiveTheSums) {
  int32_t saved = dist_rt_get_num_threads();
  bool packs = dist_rt::packedSgemmAAvailable();
  dist_rt::PackedGemmMinWorkScope allProducts(0);
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{6, 16, 8},    {7, 49, 17},    {16, 196, 300},
                          {24, 57, 64},  {96, 100, 16},  {13, 40, 513},
                          {300, 30, 40}, {600, 24, 72},  {8, 48, 16},
                          {9, 96, 70},   {24, 145, 300}, {17, 33, 8},
                          {17, 50, 9},   {40, 54, 130},  {128, 49, 40},
                          {40, 196, 24}, {136, 17, 12},  {2, 100, 32},
                          {3, 50, 9},    {5, 40, 64},    {4, 17, 130}};
  for (const Shape &s : shapes)
    for (bool transposed : {false, true})
      for (bool overwrite : {false, true})
        for (int32_t threads : {1, 2, 3}) {
          SCOPED_TRACE(testing::Message() << s.m << "x" << s.n << "x" << s.k
                                          << (transposed ? " A^T" : "")
                                          << (overwrite ? " set" : " add")
                                          << " threads " << threads);
          dist_rt_set_num_threads(threads);
          // B's and C's rows padded by 5; A stored m x k or k x m.
          int64_t ldb = s.n + 5, ldc = s.n + 5;
          std::vector<float> w(size_t(s.m * s.k)), b(size_t(s.k * ldb)),
              c(size_t(s.m * ldc));
          fill(w, uint32_t(s.m));
          fill(b, uint32_t(s.n + s.k));
          fill(c, 11);
          int64_t aSm = transposed ? 1 : s.k, aSk = transposed ? s.m : 1;
          std::vector<double> want(c.begin(), c.end());
          for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = 0; j < s.n; ++j) {
              double sum = overwrite ? 0.0 : want[size_t(i * ldc + j)];
              for (int64_t p = 0; p < s.k; ++p)
                sum += double(w[size_t(i * aSm + p * aSk)]) *
                       double(b[size_t(p * ldb + j)]);
              want[size_t(i * ldc + j)] = sum;
            }
          dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
          int64_t before = dist_rt::packedGemmCalls();
          (overwrite ? dist_rt_gemm_set_f32 : dist_rt_gemm_f32)(
              1, s.m, s.n, s.k, asInt(w.data()), 0, aSm, aSk, asInt(b.data()),
              ldb, 1, asInt(c.data()), 0, ldc, 1, 0);
          EXPECT_EQ(dist_rt::packedGemmCalls() - before, packs ? 1 : 0);
          dist_rt::unregisterConstantMemory(w.data());
          for (size_t i = 0; i < c.size(); ++i)
            ASSERT_NEAR(c[i], want[i], 1e-5 * std::sqrt(double(s.k)))
                << "element " << i;
        }
  // A batch of images sharing the filters: one packed product each.
  {
    const int64_t batch = 3, m = 20, n = 33, k = 27;
    std::vector<float> w(m * k), b(batch * k * n), c(batch * m * n);
    fill(w, 21);
    fill(b, 22);
    dist_rt_set_num_threads(2);
    dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
    int64_t before = dist_rt::packedGemmCalls();
    dist_rt_gemm_set_f32(batch, m, n, k, asInt(w.data()), 0, k, 1,
                         asInt(b.data()), n, 1, asInt(c.data()), m * n, n, 1,
                         k * n);
    EXPECT_EQ(dist_rt::packedGemmCalls() - before, packs ? batch : 0);
    dist_rt::unregisterConstantMemory(w.data());
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += double(w[size_t(i * k + p)]) *
                   double(b[size_t((t * k + p) * n + j)]);
          ASSERT_NEAR(c[size_t((t * m + i) * n + j)], sum, 1e-4)
              << "image " << t << " row " << i << " column " << j;
        }
  }
  // Writable filters are never packed; nor are products of one row (the
  // library's gemv).
  std::vector<float> w(64 * 64), b(64 * 64), c(64 * 64);
  int64_t before = dist_rt::packedGemmCalls();
  dist_rt_gemm_set_f32(1, 64, 64, 64, asInt(w.data()), 0, 64, 1,
                       asInt(b.data()), 64, 1, asInt(c.data()), 0, 64, 1, 0);
  EXPECT_EQ(dist_rt::packedGemmCalls(), before);
  dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
  dist_rt_gemm_set_f32(1, 1, 64, 64, asInt(w.data()), 0, 64, 1, asInt(b.data()),
                       64, 1, asInt(c.data()), 0, 64, 1, 0);
  EXPECT_EQ(dist_rt::packedGemmCalls(), before);
  dist_rt::unregisterConstantMemory(w.data());
  RecordProperty("packed", packs ? "yes" : "no");
  dist_rt_set_num_threads(saved);
}

// Threads share a product on constant filters by rows where its panels are
// few (a 7 x 7 image is a panel of 48 columns and one of 1: by panels, one
// thread would run nearly all of it), by panels where they are many.
TEST(GemmConstantWeights, FewPanelsAreSharedByRows) {
  if (!dist_rt::packedSgemmAAvailable())
    GTEST_SKIP() << "no packed kernel on this host";
  int64_t tile = dist_rt::packedSgemmABlockRows(8, 1000, 1);
  // Many panels: one block, the panels shared.
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(24, 3136, 2),
            (24 + tile - 1) / tile * tile);
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(128, 3136, 2) % tile, 0);
  EXPECT_LE(dist_rt::packedSgemmABlockRows(600, 49, 1), 256);
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(600, 49, 1) % tile, 0);
  // The AVX-512 tiles: 8 rows by panels of 48 columns (AVX2's 6 by 16 make
  // several panels of these products).
  if (dist_rt::hostSimdLevel() != dist_rt::SimdLevel::Avx512)
    return;
  // A block of rows per thread, of whole tiles.
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(128, 49, 2), 64);
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(128, 196, 2), 64);
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(128, 49, 4), 32);
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(1024, 49, 2), 256);
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(128, 3136, 2), 128);
  // One thread: blocks of at most 256 rows.
  EXPECT_EQ(dist_rt::packedSgemmABlockRows(128, 49, 1), 128);
}

// dist_rt_gemm_set_act_f32 (the product with its bias and SiLU / ReLU /
// Clip, dist-fuse-product-epilogues): constant filters with a bias per row (the
// packed kernel applies the epilogue as it stores, on hosts that pack),
// writable ones and a bias per column (the libraries, then one pass), no
// bias, C's columns as a padded image's positions (the padding untouched,
// or with DIST_RT_GEMM_ZERO_GAPS the gap after each row zeroed), C's old
// values added first (DIST_RT_GEMM_ACCUMULATE, a residual), a batch
// sharing the filters, one and two threads: all against a double loop,
// with the runtime's ReLU (v <= 0 -> +0) and Clip (ordered compares), SiLU
// against a double-precision exp, and HardSwish.
TEST(GemmEpilogue, BiasAndActivationAsStored) {
  int32_t saved = dist_rt_get_num_threads();
  bool packs = dist_rt::packedSgemmAAvailable();
  dist_rt::PackedGemmMinWorkScope allProducts(0);
  const float sentinel = 7.25f;
  // Products of one narrow panel; of full AVX-512 panels (48 columns, whose
  // tiles cross the image's rows) and a last one of 9 or 8 columns (16 rows
  // at a time, crossing rows too).
  struct Geometry {
    int64_t m, k, rowLen, rows;
  };
  for (const Geometry &g : {Geometry{14, 19, 5, 4}, Geometry{17, 70, 7, 15},
                            Geometry{20, 33, 7, 8}})
    for (bool constant : {true, false})
      for (int biasKind : {0, 1, 2}) // none, per row, per column
        for (int64_t flags :
             {int64_t(0), int64_t(DIST_RT_GEMM_RELU),
              int64_t(DIST_RT_GEMM_CLIP),
              int64_t(DIST_RT_GEMM_RELU | DIST_RT_GEMM_CLIP),
              int64_t(DIST_RT_GEMM_ZERO_GAPS),
              int64_t(DIST_RT_GEMM_RELU | DIST_RT_GEMM_CLIP |
                      DIST_RT_GEMM_ZERO_GAPS),
              int64_t(DIST_RT_GEMM_SILU),
              int64_t(DIST_RT_GEMM_SILU | DIST_RT_GEMM_CLIP |
                      DIST_RT_GEMM_ZERO_GAPS),
              int64_t(DIST_RT_GEMM_ACCUMULATE),
              int64_t(DIST_RT_GEMM_ACCUMULATE | DIST_RT_GEMM_RELU),
              int64_t(DIST_RT_GEMM_ACCUMULATE | DIST_RT_GEMM_SILU |
                      DIST_RT_GEMM_CLIP | DIST_RT_GEMM_ZERO_GAPS),
              int64_t(DIST_RT_GEMM_HARDSWISH),
              int64_t(DIST_RT_GEMM_ACCUMULATE | DIST_RT_GEMM_HARDSWISH |
                      DIST_RT_GEMM_RELU | DIST_RT_GEMM_ZERO_GAPS)})
          for (int image : {0, 1, 2}) // plain, image, image row by row
            for (int64_t batch : {int64_t(1), int64_t(2)})
              for (int32_t threads : {1, 2}) {
                const int64_t m = g.m, k = g.k, rowLen = g.rowLen,
                              rows = g.rows, n = rowLen * rows;
                SCOPED_TRACE(testing::Message()
                             << m << "x" << n << "x" << k << " "
                             << (constant ? "constant" : "writable") << " bias "
                             << biasKind << " flags " << flags << " image "
                             << image << " batch " << batch << " threads "
                             << threads);
                dist_rt_set_num_threads(threads);
                // Without room for a whole temporary product, the libraries
                // write an image's rows one by one.
                dist_rt::setGemmImageScratchLimit(image == 2 ? 0 : SIZE_MAX);
                // C's rows: n values, or `rows` runs of rowLen 3 apart more.
                int64_t rowStride = image ? rowLen + 3 : rowLen;
                int64_t ldc = image ? rows * rowStride + 2 : n;
                std::vector<float> w(size_t(m * k)), b(size_t(batch * k * n)),
                    c(size_t(batch * m * ldc), sentinel),
                    bias(size_t(std::max(m, n)));
                fill(w, 31);
                fill(b, 32);
                fill(bias, 33);
                // With ACCUMULATE, C holds a residual to add.
                bool accumulate = flags & DIST_RT_GEMM_ACCUMULATE;
                if (accumulate)
                  fill(c, 34);
                const float lo = -0.5f, hi = 0.75f;
                auto place = [&](int64_t t, int64_t i, int64_t j) {
                  return size_t(t * m * ldc + i * ldc +
                                (j / rowLen) * rowStride + j % rowLen);
                };
                std::vector<float> want(c);
                for (int64_t t = 0; t < batch; ++t)
                  for (int64_t i = 0; i < m; ++i)
                    for (int64_t j = 0; j < n; ++j) {
                      double sum = 0;
                      for (int64_t p = 0; p < k; ++p)
                        sum += double(w[size_t(i * k + p)]) *
                               double(b[size_t((t * k + p) * n + j)]);
                      if (accumulate)
                        sum += double(c[place(t, i, j)]);
                      float v = float(sum);
                      if (biasKind)
                        v += bias[size_t(biasKind == 1 ? i : j)];
                      if (flags & DIST_RT_GEMM_SILU)
                        v = float(double(v) / (1.0 + std::exp(-double(v))));
                      if (flags & DIST_RT_GEMM_HARDSWISH)
                        v = float(double(v) *
                                  std::min(std::max(double(v) / 6.0 + 0.5, 0.0),
                                           1.0));
                      if (flags & DIST_RT_GEMM_RELU)
                        v = v <= 0.0f ? 0.0f : v;
                      if (flags & DIST_RT_GEMM_CLIP)
                        v = std::min(std::max(v, lo), hi);
                      want[place(t, i, j)] = v;
                      // The gap after each image row, with ZERO_GAPS.
                      if (image && (flags & DIST_RT_GEMM_ZERO_GAPS) &&
                          j % rowLen == rowLen - 1)
                        for (int64_t q = 1; q <= rowStride - rowLen; ++q)
                          want[place(t, i, j) + size_t(q)] = 0.0f;
                    }
                if (constant)
                  dist_rt::registerConstantMemory(w.data(),
                                                  w.size() * sizeof(float));
                int64_t before = dist_rt::packedGemmCalls();
                dist_rt_gemm_set_act_f32(
                    batch, m, n, k, asInt(w.data()), 0, k, 1, asInt(b.data()),
                    n, 1, asInt(c.data()), m * ldc, ldc, 1, k * n,
                    biasKind ? asInt(bias.data()) : 0, biasKind == 1 ? 1 : 0,
                    biasKind == 2 ? 1 : 0, flags, lo, hi, image ? rowLen : 0,
                    image ? rowStride : 0);
                // A bias per column: the packed product, then the pass (row
                // by row, products of 5 columns: too narrow to pack; always
                // so for an image with ACCUMULATE, whose product adds onto
                // C where it lies).
                bool packed =
                    packs && constant &&
                    !(biasKind == 2 && (image == 2 || (image && accumulate)));
                EXPECT_EQ(dist_rt::packedGemmCalls() - before,
                          packed ? batch : 0);
                if (constant)
                  dist_rt::unregisterConstantMemory(w.data());
                for (size_t e = 0; e < c.size(); ++e)
                  ASSERT_NEAR(c[e], want[e], 1e-5 * std::sqrt(double(k)))
                      << "element " << e;
              }
  dist_rt::setGemmImageScratchLimit(SIZE_MAX);
  RecordProperty("packed", packs ? "yes" : "no");
  dist_rt_set_num_threads(saved);
}

// A batch sharing one operand runs as one product when the other operand
// and C stack its matrices evenly (the results are checked by the cases
// above); batches that sum into one C, or stand apart, stay batches.
TEST(GemmFolding, SharedOperandsFoldTheBatch) {
  const int64_t batch = 6, m = 1, n = 40, k = 24;
  std::vector<float> a(batch * k), b(k * n), c(batch * n);
  fill(a, 6);
  fill(b, 7);
  auto ptr = [](const float *p) {
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
  };
  auto call = [&](int64_t aSb, int64_t aSm, int64_t cSb, int64_t cSm) {
    int64_t before = dist_rt::foldedGemmCalls();
    dist_rt_gemm_set_f32(batch, m, n, k, ptr(a.data()), aSb, aSm, 1,
                         ptr(b.data()), n, 1, ptr(c.data()), cSb, cSm, 1, 0);
    return dist_rt::foldedGemmCalls() - before;
  };
  // [6, 1, K] rows through a view whose unit dimension has another stride.
  EXPECT_EQ(call(k, batch * k, n, batch * n), 1);
  // Rows contiguous, unit dimension strided as its extent says.
  EXPECT_EQ(call(k, k, n, n), 1);
  // Every batch into the same C row: summed, not folded.
  EXPECT_EQ(call(k, k, 0, n), 0);
  // Rows of A not evenly spaced across batches cannot be one matrix: m = 2
  // rows per batch with a gap after each pair.
  std::vector<float> a2(batch * (2 * k + 3)), c2(batch * 2 * n);
  fill(a2, 8);
  int64_t before = dist_rt::foldedGemmCalls();
  dist_rt_gemm_set_f32(batch, 2, n, k, ptr(a2.data()), 2 * k + 3, k, 1,
                       ptr(b.data()), n, 1, ptr(c2.data()), 2 * n, n, 1, 0);
  EXPECT_EQ(dist_rt::foldedGemmCalls(), before);
  // Rows two apart across batches, one apart within: gathered instead.
  int64_t gathered = dist_rt::gatheredGemmCalls();
  std::vector<float> a3(batch * 2 * k), c3(batch * 2 * n);
  dist_rt_gemm_set_f32(batch, 2, n, k, ptr(a3.data()), k, batch * k, 1,
                       ptr(b.data()), n, 1, ptr(c3.data()), 2 * n, n, 1, 0);
  EXPECT_EQ(dist_rt::gatheredGemmCalls(), gathered + 1);
  // Summed into one C: neither.
  dist_rt_gemm_f32(batch, 2, n, k, ptr(a3.data()), k, batch * k, 1,
                   ptr(b.data()), n, 1, ptr(c3.data()), 0, n, 1, 0);
  EXPECT_EQ(dist_rt::gatheredGemmCalls(), gathered + 1);
}

// Many small products are spread over the pool as a whole (the DLRM-style
// model's 128 feature interactions, 9 x 32 x 9 each), a single small one is
// not, and neither runs on the pool with one thread.
TEST(GemmThreads, ManySmallProductsAreSpread) {
  int32_t saved = dist_rt_get_num_threads();
  const int64_t batch = 128, m = 9, n = 9, k = 32;
  std::vector<float> a(batch * m * k), c(batch * m * n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i % 7) - 3;
  auto ptr = [](const float *p) {
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
  };
  // C[b] = A[b] A[b]^T: B is A read transposed.
  auto run = [&](int64_t count) {
    std::fill(c.begin(), c.end(), 0.0f);
    dist_rt_gemm_f32(count, m, n, k, ptr(a.data()), m * k, k, 1, ptr(a.data()),
                     1, k, ptr(c.data()), m * n, n, 1, m * k);
  };
  dist_rt_set_num_threads(2);
  int64_t before = dist_rt::spreadGemmCalls();
  run(batch);
  EXPECT_EQ(dist_rt::spreadGemmCalls(), before + 1);
  for (int64_t b : {int64_t(0), batch - 1})
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float want = 0;
        for (int64_t p = 0; p < k; ++p)
          want += a[b * m * k + i * k + p] * a[b * m * k + j * k + p];
        EXPECT_FLOAT_EQ(c[b * m * n + i * n + j], want);
      }
  run(1);
  EXPECT_EQ(dist_rt::spreadGemmCalls(), before + 1);
  dist_rt_set_num_threads(1);
  run(batch);
  EXPECT_EQ(dist_rt::spreadGemmCalls(), before + 1);
  dist_rt_set_num_threads(saved);
}

TEST(GemmLibrary, AliasingRowsOfBSkipOneDnnWithoutAvx512) {
  // dnnlSuits in blas.cpp: oneDNN takes products of enough work, but on a
  // host without AVX-512 not those of fewer than 512 rows whose B rows lie
  // a multiple of 2 KiB apart; those go to OpenBLAS. Both give the same
  // sums.
  int32_t saved = dist_rt_get_num_threads();
  dist_rt_set_num_threads(1);
  auto ptr = [](const float *p) {
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
  };
  // m x n x k with B = k x n, all over oneDNN's least work.
  auto oneDnnRuns = [&](int64_t m, int64_t n, int64_t k) {
    std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = static_cast<float>(i % 5) - 2;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<float>(i % 3) - 1;
    int64_t before = dist_rt::dnnlGemmCalls();
    dist_rt_gemm_set_f32(1, m, n, k, ptr(a.data()), 0, k, 1, ptr(b.data()), n,
                         1, ptr(c.data()), 0, n, 1, 0);
    for (int64_t i : {int64_t(0), m - 1})
      for (int64_t j : {int64_t(0), n / 2, n - 1}) {
        float want = 0;
        for (int64_t p = 0; p < k; ++p)
          want += a[size_t(i * k + p)] * b[size_t(p * n + j)];
        EXPECT_EQ(c[size_t(i * n + j)], want) << m << "x" << n << "x" << k;
      }
    return dist_rt::dnnlGemmCalls() - before;
  };
  bool dnnl = dist_rt::blasAvailable() && dist_rt::dnnlAvailable();
  bool avx512 = dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512;
  // Rows of B 1 KiB and 3 KiB apart: oneDNN.
  EXPECT_EQ(oneDnnRuns(64, 256, 256), dnnl ? 1 : 0);
  EXPECT_EQ(oneDnnRuns(64, 768, 256), dnnl ? 1 : 0);
  // 4 KiB and 6 KiB apart: OpenBLAS without AVX-512, unless 512 rows.
  EXPECT_EQ(oneDnnRuns(64, 1024, 256), dnnl && avx512 ? 1 : 0);
  EXPECT_EQ(oneDnnRuns(200, 1536, 64), dnnl && avx512 ? 1 : 0);
  EXPECT_EQ(oneDnnRuns(512, 1024, 64), dnnl ? 1 : 0);
  RecordProperty("onednn", dnnl ? "loaded" : "missing");
  dist_rt_set_num_threads(saved);
}

TEST(GemmLibrary, OneRowOrColumnRunsAsGemv) {
  // gemvOne in blas.cpp: a product of one row or one column goes to the
  // library's gemv (several times faster than its gemm there), in every
  // layout CBLAS takes, with the same sums.
  if (!dist_rt::blasAvailable())
    GTEST_SKIP() << "OpenBLAS did not load: the built-in loops run these";
  int32_t saved = dist_rt_get_num_threads();
  int64_t before = dist_rt::gemvGemmCalls();
  int64_t m = 9, n = 300, k = 70;
  GemmCase cases[] = {
      {"row, B row-major", 1, 1, n, k, {0, k, 1}, {0, n, 1}, {0, n, 1}},
      {"row, B transposed", 1, 1, n, k, {0, k, 1}, {0, 1, k}, {0, n, 1}},
      {"column, A row-major", 1, m, 1, k, {0, k, 1}, {0, 1, 1}, {0, 1, 1}},
      {"column, A transposed", 1, m, 1, k, {0, 1, m}, {0, 1, 1}, {0, 1, 1}},
  };
  dist_rt_set_num_threads(1);
  for (const GemmCase &c : cases) {
    checkCase<float>(c, /*overwrite=*/true);
    checkCase<double>(c);
  }
  EXPECT_EQ(dist_rt::gemvGemmCalls() - before, 8);
  // Two rows are a product.
  before = dist_rt::gemvGemmCalls();
  checkCase<float>({"two rows", 1, 2, n, k, {0, k, 1}, {0, n, 1}, {0, n, 1}});
  EXPECT_EQ(dist_rt::gemvGemmCalls(), before);
  dist_rt_set_num_threads(saved);
}

TEST(GemmBlasTest, ReportsWhetherOpenBlasLoaded) {
  // Not an assertion on the machine: only that asking is stable.
  bool first = dist_rt::blasAvailable();
  EXPECT_EQ(dist_rt::blasAvailable(), first);
  // Shown in the XML report; without OpenBLAS the "OpenBLAS" cases above
  // ran on the built-in loops.
  RecordProperty("openblas", first ? "loaded" : "missing");
}

//===----------------------------------------------------------------------===//
// OpenBLAS's kernel set (pickCoreType in blas.cpp)
//===----------------------------------------------------------------------===//

/// Whether the runtime picks AVX-512 kernels (the CPU's level, capped by
/// DIST_RT_SIMD).
bool cpuHasAvx512() {
  return dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512;
}

/// Set around each death test below: its child runs the test again from
/// the start, where the parent has checked OpenBLAS already and loading it
/// would come before the variables under test are set.
constexpr const char *kInCoreTypeChild = "DIST_RT_TEST_CORE_TYPE_CHILD";

/// Whether this process's OpenBLAS reports a kernel set (a build with
/// run-time kernel selection, as Debian's is).
bool openblasReportsCoreType() {
  return std::getenv(kInCoreTypeChild) || !dist_rt::blasCoreName().empty();
}

/// In a fresh process (OpenBLAS loads once per process): sets the two
/// variables, loads OpenBLAS and exits with 0 when it runs `want` and
/// OPENBLAS_CORETYPE reads as before; prints what it found otherwise.
void checkCoreTypeInFreshProcess(const char *openblasCoreType,
                                 const char *forced, const std::string &want) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv(kInCoreTypeChild, "1", 1);
  EXPECT_EXIT(
      {
        if (openblasCoreType)
          setenv("OPENBLAS_CORETYPE", openblasCoreType, 1);
        else
          unsetenv("OPENBLAS_CORETYPE");
        if (forced)
          setenv("DIST_RT_OPENBLAS_CORETYPE", forced, 1);
        else
          unsetenv("DIST_RT_OPENBLAS_CORETYPE");
        std::string got = dist_rt::blasCoreName();
        const char *after = std::getenv("OPENBLAS_CORETYPE");
        bool envKept = openblasCoreType
                           ? after && std::string(after) == openblasCoreType
                           : after == nullptr;
        bool ok = strcasecmp(got.c_str(), want.c_str()) == 0 && envKept;
        if (!ok)
          std::fprintf(stderr,
                       "core '%s' (want '%s'), OPENBLAS_CORETYPE "
                       "afterwards '%s'\n",
                       got.c_str(), want.c_str(), after ? after : "(unset)");
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
  unsetenv(kInCoreTypeChild);
}

// The choice itself, for CPUs this machine is not: by vector extensions,
// whatever the model.
TEST(GemmCoreType, ChosenByTheHostsVectorExtensions) {
  using dist_rt::chooseOpenblasCoreType;
  using L = dist_rt::SimdLevel;
  // Nothing in the environment: the best set for the level.
  EXPECT_EQ(chooseOpenblasCoreType(nullptr, nullptr, L::Avx512), "SkylakeX");
  EXPECT_EQ(chooseOpenblasCoreType(nullptr, nullptr, L::Avx2), "Haswell");
  EXPECT_EQ(chooseOpenblasCoreType(nullptr, nullptr, L::Avx), "SandyBridge");
  EXPECT_EQ(chooseOpenblasCoreType(nullptr, nullptr, L::None), "");
  // A set of the host's level is kept (any case), one below is raised.
  EXPECT_EQ(chooseOpenblasCoreType("zen", nullptr, L::Avx2), "zen");
  EXPECT_EQ(chooseOpenblasCoreType("CooperLake", nullptr, L::Avx512),
            "CooperLake");
  EXPECT_EQ(chooseOpenblasCoreType("Haswell", nullptr, L::Avx512), "SkylakeX");
  EXPECT_EQ(chooseOpenblasCoreType("Prescott", nullptr, L::Avx2), "Haswell");
  EXPECT_EQ(chooseOpenblasCoreType("", nullptr, L::Avx2), "Haswell");
  // One above the host would be ignored by OpenBLAS: the host's best.
  EXPECT_EQ(chooseOpenblasCoreType("SkylakeX", nullptr, L::Avx2), "Haswell");
  // Without AVX the environment's choice stands.
  EXPECT_EQ(chooseOpenblasCoreType("Nehalem", nullptr, L::None), "Nehalem");
  // DIST_RT_OPENBLAS_CORETYPE wins over everything.
  EXPECT_EQ(chooseOpenblasCoreType("SkylakeX", "Prescott", L::Avx512),
            "Prescott");
  EXPECT_EQ(chooseOpenblasCoreType(nullptr, "", L::Avx2), "Haswell");
}

TEST(GemmCoreType, HaswellFromTheEnvironmentIsRaisedOnAvx512) {
  if (!openblasReportsCoreType())
    GTEST_SKIP() << "OpenBLAS is missing or has no run-time kernel choice";
  // Environments that meet OpenBLAS 0.3.21's misdetection of AMD Zen 4/5
  // set Haswell for every program; on AVX-512 the runtime's copy runs the
  // SkylakeX kernels (twice as fast here) and the variable is unchanged.
  checkCoreTypeInFreshProcess("Haswell", nullptr,
                              cpuHasAvx512() ? "SkylakeX" : "Haswell");
}

TEST(GemmCoreType, AnAvx512ChoiceIsKept) {
  if (!openblasReportsCoreType() || !cpuHasAvx512())
    GTEST_SKIP() << "needs OpenBLAS with run-time kernel choice and AVX-512";
  checkCoreTypeInFreshProcess("CooperLake", nullptr, "CooperLake");
}

TEST(GemmCoreType, AnUnknownForcedCoreTypeIsReported) {
  if (!openblasReportsCoreType())
    GTEST_SKIP() << "OpenBLAS is missing or has no run-time kernel choice";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv(kInCoreTypeChild, "1", 1);
  // One line on stderr naming the variable, and the run goes on.
  EXPECT_EXIT(
      {
        setenv("DIST_RT_OPENBLAS_CORETYPE", "NoSuchCore", 1);
        std::exit(dist_rt::blasCoreName().empty() ? 1 : 0);
      },
      testing::ExitedWithCode(0),
      "warning: dist_rt: DIST_RT_OPENBLAS_CORETYPE=NoSuchCore: OpenBLAS runs "
      "its [A-Za-z0-9]+ kernels instead");
  unsetenv(kInCoreTypeChild);
}

TEST(GemmCoreType, DistRtOpenblasCoreTypeForcesTheKernels) {
  if (!openblasReportsCoreType())
    GTEST_SKIP() << "OpenBLAS is missing or has no run-time kernel choice";
  checkCoreTypeInFreshProcess(nullptr, "Haswell", "Haswell");
}

} // namespace
