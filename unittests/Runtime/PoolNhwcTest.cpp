//===- PoolNhwcTest.cpp - Tests for dist_rt_maxpool2d_nhwc_f32 --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for the channels-last max pooling: every case is checked
// against a naive loop over a copy of the image bordered with -inf (the
// generated code's way, which the call replaces) at 1 to 3 threads: kernels
// of 1x1 to 5x5, strides, dilations, padding before and after, windows
// that reach past the image's end (ceil mode), windows of padding alone,
// channel counts around the vector width; NaN and signed zeros as
// arith.maximumf takes them.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow;
};

std::string caseName(const PoolCase &k) {
  return "n" + std::to_string(k.n) + " c" + std::to_string(k.c) + " " +
         std::to_string(k.h) + "x" + std::to_string(k.w) + " k" +
         std::to_string(k.kh) + "x" + std::to_string(k.kw) + " s" +
         std::to_string(k.sh) + "x" + std::to_string(k.sw) + " d" +
         std::to_string(k.dh) + "x" + std::to_string(k.dw) + " p" +
         std::to_string(k.pt) + "," + std::to_string(k.pl) + " -> " +
         std::to_string(k.oh) + "x" + std::to_string(k.ow);
}

/// IEEE 754-2019 maximum (arith.maximumf), written apart from the
/// runtime's.
float maximum(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<float>::quiet_NaN();
  if (a == 0.0f && b == 0.0f)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

/// The generated code's way: a copy bordered with -inf, read whole.
std::vector<float> naive(const PoolCase &k, const std::vector<float> &in) {
  int64_t ph = (k.oh - 1) * k.sh + (k.kh - 1) * k.dh + 1,
          pw = (k.ow - 1) * k.sw + (k.kw - 1) * k.dw + 1;
  ph = std::max(ph, k.pt + k.h);
  pw = std::max(pw, k.pl + k.w);
  const float lowest = -std::numeric_limits<float>::infinity();
  std::vector<float> padded(size_t(k.n * ph * pw * k.c), lowest);
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t y = 0; y < k.h; ++y)
      for (int64_t x = 0; x < k.w; ++x)
        for (int64_t ch = 0; ch < k.c; ++ch)
          padded[size_t(((b * ph + y + k.pt) * pw + x + k.pl) * k.c + ch)] =
              in[size_t(((b * k.h + y) * k.w + x) * k.c + ch)];
  std::vector<float> out(size_t(k.n * k.oh * k.ow * k.c));
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t y = 0; y < k.oh; ++y)
      for (int64_t x = 0; x < k.ow; ++x)
        for (int64_t ch = 0; ch < k.c; ++ch) {
          float m = lowest;
          for (int64_t i = 0; i < k.kh; ++i)
            for (int64_t j = 0; j < k.kw; ++j)
              m = maximum(m,
                          padded[size_t(((b * ph + y * k.sh + i * k.dh) * pw +
                                         x * k.sw + j * k.dw) *
                                            k.c +
                                        ch)]);
          out[size_t(((b * k.oh + y) * k.ow + x) * k.c + ch)] = m;
        }
  return out;
}

bool sameBits(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

/// Runs `k` on `in` and checks every output against naive, bit for bit
/// (NaN as NaN).
void check(const PoolCase &k, const std::vector<float> &in) {
  std::vector<float> out(size_t(k.n * k.oh * k.ow * k.c), 12345.0f);
  dist_rt_maxpool2d_nhwc_f32(
      k.n, k.c, k.h, k.w, k.kh, k.kw, k.sh, k.sw, k.dh, k.dw, k.pt, k.pl, k.oh,
      k.ow, int64_t(intptr_t(in.data())), int64_t(intptr_t(out.data())));
  std::vector<float> want = naive(k, in);
  int64_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!sameBits(out[i], want[i]) && wrong++ < 3)
      ADD_FAILURE() << caseName(k) << " at " << i << ": " << out[i]
                    << " != " << want[i];
}

std::vector<float> filled(int64_t count, int64_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    v[size_t(i)] = float((i * 7919 + seed * 131) % 41 - 20) / 8.0f;
  return v;
}

const PoolCase kCases[] = {
    // n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow
    {2, 64, 12, 12, 3, 3, 2, 2, 1, 1, 1, 1, 6, 6},   // ResNet's stem pool
    {1, 3, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 7, 9},      // 3 channels, same
    {1, 17, 9, 8, 2, 2, 2, 2, 1, 1, 0, 0, 4, 4},     // 17 channels, valid
    {3, 33, 10, 11, 3, 2, 2, 3, 1, 1, 0, 1, 5, 4},   // ceil mode past the end
    {1, 16, 11, 11, 3, 3, 1, 1, 2, 2, 2, 2, 11, 11}, // dilated
    {1, 20, 13, 6, 5, 1, 3, 1, 1, 1, 2, 0, 5, 6},    // 5x1
    {2, 8, 5, 5, 1, 1, 2, 2, 1, 1, 0, 0, 3, 3},      // 1x1, strides 2
    // Taps 4 rows apart from row -4 of a one-row image: rows -4 and 0.
    {1, 5, 1, 7, 2, 3, 1, 1, 4, 1, 4, 1, 1, 7},
};

class PoolNhwcTest : public ::testing::TestWithParam<int> {};

TEST_P(PoolNhwcTest, MatchesPaddedLoop) {
  dist_rt_set_num_threads(GetParam());
  for (const PoolCase &k : kCases)
    check(k, filled(k.n * k.h * k.w * k.c, k.c));
  dist_rt_set_num_threads(0);
}

TEST_P(PoolNhwcTest, NaNWinsAndPositiveZeroBeatsNegative) {
  dist_rt_set_num_threads(GetParam());
  for (int64_t c : {int64_t(5), int64_t(16), int64_t(37)}) {
    PoolCase k{2, c, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 3, 3};
    std::vector<float> in(size_t(k.n * k.h * k.w * k.c), -0.0f);
    for (size_t i = 0; i < in.size(); i += 7)
      in[i] = 0.0f;
    for (size_t i = 3; i < in.size(); i += 29)
      in[i] = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 11; i < in.size(); i += 13)
      in[i] = -std::numeric_limits<float>::infinity();
    check(k, in);
  }
  dist_rt_set_num_threads(0);
}

/// A window of padding alone gives -inf, as the bordered copy does: a
/// 1x1 window at padding 1 and strides 1 reads nothing but the border at
/// the output's first and last rows and columns.
TEST(PoolNhwc, WindowsOfPaddingAloneGiveMinusInfinity) {
  PoolCase k{1, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, 5};
  std::vector<float> in = filled(k.n * k.h * k.w * k.c, 2);
  check(k, in);
  std::vector<float> out(size_t(k.oh * k.ow * k.c));
  dist_rt_maxpool2d_nhwc_f32(
      k.n, k.c, k.h, k.w, k.kh, k.kw, k.sh, k.sw, k.dh, k.dw, k.pt, k.pl, k.oh,
      k.ow, int64_t(intptr_t(in.data())), int64_t(intptr_t(out.data())));
  EXPECT_EQ(out[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[size_t((1 * k.ow + 1) * k.c)], in[0]);
}

INSTANTIATE_TEST_SUITE_P(Threads, PoolNhwcTest, ::testing::Values(1, 2, 3));

} // namespace
