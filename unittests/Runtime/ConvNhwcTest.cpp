//===- ConvNhwcTest.cpp - Tests for dist_rt_conv2d_nhwc_f32 -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for the channels-last convolution: every case is checked
// against a naive double-precision loop over the same channels-last
// arrays, on oneDNN (where it loads: the calls that oneDNN ran are counted)
// and on the plain loop, over 1x1 to 7x7 kernels, strides, dilations,
// asymmetric padding, groups (depthwise and several channels a group),
// batches, every epilogue flag, writable and constant filters, and 1 to 3
// threads (a call split by images, by output rows or by filters); and a
// 1x1 convolution with the depthwise one after it as one call, in bands.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"

#include "internal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace {

struct NhwcCase {
  int64_t groups, n, c, h, w, f, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  int64_t oh() const { return (h + pt + pb - (kh - 1) * dh - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - (kw - 1) * dw - 1) / sw + 1; }
  int64_t inputs() const { return n * h * w * groups * c; }
  int64_t outputs() const { return n * oh() * ow() * groups * f; }
  int64_t weights() const { return groups * f * c * kh * kw; }
};

std::string caseName(const NhwcCase &k) {
  return "g" + std::to_string(k.groups) + " n" + std::to_string(k.n) + " c" +
         std::to_string(k.c) + " " + std::to_string(k.h) + "x" +
         std::to_string(k.w) + " f" + std::to_string(k.f) + " k" +
         std::to_string(k.kh) + "x" + std::to_string(k.kw) + " s" +
         std::to_string(k.sh) + " d" + std::to_string(k.dh) + " p" +
         std::to_string(k.pt) + std::to_string(k.pl) + std::to_string(k.pb) +
         std::to_string(k.pr);
}

/// The naive result: sums in double, then the flags' epilogue.
std::vector<float> naive(const NhwcCase &k, const std::vector<float> &in,
                         const std::vector<float> &w,
                         const std::vector<float> *bias,
                         const std::vector<float> &old, int64_t flags, float lo,
                         float hi) {
  std::vector<float> out(size_t(k.outputs()));
  int64_t C = k.groups * k.c, F = k.groups * k.f;
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t y = 0; y < k.oh(); ++y)
      for (int64_t x = 0; x < k.ow(); ++x)
        for (int64_t fo = 0; fo < F; ++fo) {
          int64_t g = fo / k.f;
          double acc = bias ? (*bias)[size_t(fo)] : 0.0;
          for (int64_t ci = 0; ci < k.c; ++ci)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                int64_t r = y * k.sh + i * k.dh - k.pt;
                int64_t q = x * k.sw + j * k.dw - k.pl;
                if (r < 0 || r >= k.h || q < 0 || q >= k.w)
                  continue;
                acc +=
                    double(in[size_t(((b * k.h + r) * k.w + q) * C + g * k.c +
                                     ci)]) *
                    double(w[size_t(((fo * k.c + ci) * k.kh + i) * k.kw + j)]);
              }
          size_t at = size_t(((b * k.oh() + y) * k.ow() + x) * F + fo);
          double v = acc;
          if (flags & DIST_RT_CONV_ACCUMULATE)
            v += old[at];
          if (flags & DIST_RT_CONV_SILU)
            v = v / (1.0 + std::exp(-v));
          else if (flags & DIST_RT_CONV_HARDSWISH)
            v = v * std::fmax(0.0, std::fmin(1.0, v / 6.0 + 0.5));
          if ((flags & DIST_RT_CONV_RELU) && v < 0)
            v = 0;
          if (flags & DIST_RT_CONV_CLIP)
            v = std::fmin(std::fmax(v, double(lo)), double(hi));
          out[at] = float(v);
        }
  return out;
}

std::vector<float> filled(int64_t count, int64_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    v[size_t(i)] = float((i * 7919 + seed * 131) % 41 - 20) / 32.0f;
  return v;
}

/// Runs `k` with `flags` and checks it against naive; returns the calls
/// oneDNN ran for it.
int64_t check(const NhwcCase &k, int64_t flags, bool withBias,
              bool constantWeights) {
  std::vector<float> in = filled(k.inputs(), 1), w = filled(k.weights(), 2);
  std::vector<float> bias = filled(k.groups * k.f, 3);
  std::vector<float> out = filled(k.outputs(), 4), old = out;
  float lo = -0.25f, hi = 0.5f;
  if (constantWeights)
    dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
  int64_t before = dist_rt::dnnlConvolutionCalls();
  // Twice: the second call reuses the cached primitive (and filters).
  for (int rep = 0; rep < 2; ++rep) {
    out = old;
    dist_rt_conv2d_nhwc_f32(k.groups, k.n, k.c, k.h, k.w, k.f, k.kh, k.kw, k.sh,
                            k.sw, k.dh, k.dw, k.pt, k.pl, k.pb, k.pr, k.oh(),
                            k.ow(), int64_t(intptr_t(in.data())),
                            int64_t(intptr_t(w.data())),
                            withBias ? int64_t(intptr_t(bias.data())) : 0,
                            int64_t(intptr_t(out.data())), lo, hi, flags);
  }
  int64_t ran = dist_rt::dnnlConvolutionCalls() - before;
  if (constantWeights)
    dist_rt::unregisterConstantMemory(w.data());
  std::vector<float> want =
      naive(k, in, w, withBias ? &bias : nullptr, old, flags, lo, hi);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(out[i]) - double(want[i])));
  EXPECT_LE(worst, 1e-4) << caseName(k) << " flags " << flags;
  return ran;
}

const NhwcCase kCases[] = {
    // groups, n, c, h, w, f, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr
    {1, 1, 16, 9, 9, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  // pointwise
    {1, 2, 5, 7, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // odd counts
    {1, 1, 3, 17, 17, 8, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},  // a stem
    {1, 1, 8, 10, 10, 16, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1}, // asymmetric
    {1, 1, 4, 12, 12, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},  // dilated
    {1, 1, 6, 5, 9, 10, 1, 5, 1, 1, 1, 1, 0, 2, 0, 2},   // 1x5
    {24, 2, 1, 11, 11, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, // depthwise s2
    {16, 1, 1, 9, 9, 1, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},   // depthwise 5x5
    {4, 1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // grouped
    {1, 3, 4, 9, 7, 5, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1},    // 3 images
    {1, 1, 2, 13, 5, 3, 5, 3, 2, 1, 2, 1, 4, 1, 3, 1},   // tall, dilated
    // Small images whose rows do not split evenly split by filters on
    // several threads.
    {1, 1, 16, 7, 7, 112, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // 7 x 7 pointwise
    {1, 1, 8, 5, 5, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   // 5 x 5, 3 x 3
};

class ConvNhwcTest : public ::testing::TestWithParam<int> {};

/// The calls of a test that oneDNN ran against those it was given (each
/// case is called twice); none when the plain loop was asked for.
struct DnnlTally {
  int64_t ran = 0, calls = 0;
  void add(bool plain, int64_t r) {
    if (plain) {
      EXPECT_EQ(r, 0) << "the plain loop was asked for";
    } else {
      ran += r;
      calls += 2;
    }
  }
  /// Restores the plain-loop switch and the thread count, then checks that
  /// oneDNN ran every call whenever it loads here (Debian's libdnnl2,
  /// installed by scripts/install-deps.sh; DIST_RT_NO_DNNL leaves every
  /// call to the plain loop).
  void finish() const {
    dist_rt::setForcePlainNhwcConv(false);
    dist_rt_set_num_threads(0);
    if (!std::getenv("DIST_RT_NO_DNNL"))
      EXPECT_EQ(ran, calls) << "calls that oneDNN did not run";
  }
};

TEST_P(ConvNhwcTest, MatchesNaiveLoop) {
  dist_rt_set_num_threads(GetParam());
  const int64_t flagSets[] = {
      0,
      DIST_RT_CONV_RELU,
      DIST_RT_CONV_CLIP | DIST_RT_CONV_RELU,
      DIST_RT_CONV_SILU,
      DIST_RT_CONV_HARDSWISH,
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU,
  };
  DnnlTally tally;
  for (bool plain : {false, true}) {
    dist_rt::setForcePlainNhwcConv(plain);
    for (const NhwcCase &k : kCases)
      for (int64_t flags : flagSets)
        for (bool constant : {false, true})
          tally.add(plain, check(k, flags, /*withBias=*/flags != 0, constant));
  }
  tally.finish();
}

// A residual sum into an output larger than twice the L2 cache runs apart
// from oneDNN's primitive: parts of whole rows written to a scratch image,
// then added to the old output with the activation (sumApartChunks). With
// the cache taken as 64 KiB, small calls take that way: images split into
// rows (with the rows a 3 x 3 window reaches past them), a count of images
// the threads do not divide, every flag the way takes, and calls it must
// not take (another activation, a filter too large, a small output).
TEST_P(ConvNhwcTest, SumsOfLargeOutputsRunApart) {
  dist_rt_set_num_threads(GetParam());
  dist_rt::setNhwcCacheBytes(64 * 1024);
  const NhwcCase apart[] = {
      // groups, n, c, h, w, f, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr
      {1, 3, 16, 20, 20, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // pointwise
      {1, 1, 3, 48, 48, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, // rows, s2
      {1, 2, 7, 33, 17, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  // odd rows
  };
  const int64_t taken[] = {
      DIST_RT_CONV_ACCUMULATE,
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU,
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_CLIP,
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_CLIP | DIST_RT_CONV_RELU,
  };
  bool dnnl = !std::getenv("DIST_RT_NO_DNNL");
  for (const NhwcCase &k : apart)
    for (int64_t flags : taken)
      for (bool constant : {false, true}) {
        int64_t before = dist_rt::sumApartCalls();
        int64_t ran = check(k, flags, /*withBias=*/constant, constant);
        if (dnnl && ran > 0)
          EXPECT_EQ(dist_rt::sumApartCalls() - before, 2)
              << caseName(k) << " flags " << flags;
      }
  const NhwcCase kept[] = {
      {1, 3, 16, 20, 20, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // SiLU after
      {1, 2, 64, 20, 20, 80, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // 20 KiB filters
      {1, 1, 16, 10, 10, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // 25 KiB output
      {1, 3, 16, 20, 20, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // 32 channels
  };
  for (size_t i = 0; i < std::size(kept); ++i) {
    int64_t before = dist_rt::sumApartCalls();
    int64_t flags = DIST_RT_CONV_ACCUMULATE |
                    (i == 0 ? DIST_RT_CONV_SILU : DIST_RT_CONV_RELU);
    check(kept[i], flags, /*withBias=*/true, /*constantWeights=*/true);
    EXPECT_EQ(dist_rt::sumApartCalls(), before) << caseName(kept[i]);
  }
  dist_rt::setNhwcCacheBytes(0);
  dist_rt_set_num_threads(0);
}

/// A pointwise call and the depthwise one after it, as
/// dist_rt_conv2d_nhwc_pwdw_f32 takes them.
struct PwDwCase {
  int64_t n, c, h, w, e, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  NhwcCase pw() const {
    return {1, n, c, h, w, e, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  }
  NhwcCase dwCase() const {
    return {e, n, 1, h, w, 1, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr};
  }
};

/// Runs `k` as one call (twice) against the naive loops of its two halves;
/// returns the calls that ran in bands.
int64_t checkPwDw(const PwDwCase &k, int64_t flags1, int64_t flags2,
                  bool constant) {
  NhwcCase pw = k.pw(), dw = k.dwCase();
  std::vector<float> in = filled(pw.inputs(), 1);
  std::vector<float> w1 = filled(pw.weights(), 2), w2 = filled(dw.weights(), 3);
  std::vector<float> b1 = filled(k.e, 4), b2 = filled(k.e, 5);
  std::vector<float> out(size_t(dw.outputs()), -7.0f);
  float lo1 = -0.25f, hi1 = 0.5f, lo2 = -0.125f, hi2 = 0.25f;
  if (constant) {
    dist_rt::registerConstantMemory(w1.data(), w1.size() * sizeof(float));
    dist_rt::registerConstantMemory(w2.data(), w2.size() * sizeof(float));
  }
  int64_t before = dist_rt::pointwiseDepthwiseBandCalls();
  for (int rep = 0; rep < 2; ++rep)
    dist_rt_conv2d_nhwc_pwdw_f32(
        k.n, k.c, k.h, k.w, k.e, int64_t(intptr_t(w1.data())),
        int64_t(intptr_t(b1.data())), lo1, hi1, flags1, k.kh, k.kw, k.sh, k.sw,
        k.dh, k.dw, k.pt, k.pl, k.pb, k.pr, dw.oh(), dw.ow(),
        int64_t(intptr_t(w2.data())),
        rep == 0 ? 0 : int64_t(intptr_t(b2.data())), lo2, hi2, flags2,
        int64_t(intptr_t(in.data())), int64_t(intptr_t(out.data())));
  int64_t banded = dist_rt::pointwiseDepthwiseBandCalls() - before;
  if (constant) {
    dist_rt::unregisterConstantMemory(w1.data());
    dist_rt::unregisterConstantMemory(w2.data());
  }
  std::vector<float> mid = naive(pw, in, w1, &b1, {}, flags1, lo1, hi1);
  std::vector<float> want = naive(dw, mid, w2, &b2, {}, flags2, lo2, hi2);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(out[i]) - double(want[i])));
  EXPECT_LE(worst, 1e-4) << caseName(pw) << " then " << caseName(dw)
                         << " flags " << flags1 << ", " << flags2;
  return banded;
}

// A pointwise call and the depthwise one that reads its output, as one
// call: with the cache taken as 16 KiB, wide images over 64 KiB run in
// bands of output rows (one row a band where the rows are wide, rows kept
// from the band before, strides, dilations, asymmetric padding, 5x5 and
// 3x5 windows, counts of images and bands the threads do not divide), a
// smaller one as the two calls; both against the naive loops, on oneDNN
// and on the plain loop.
TEST_P(ConvNhwcTest, PointwiseDepthwiseBands) {
  dist_rt_set_num_threads(GetParam());
  dist_rt::setNhwcCacheBytes(16 * 1024);
  const PwDwCase banded[] = {
      // n, c, h, w, e, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr
      {2, 8, 20, 20, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, // MobileNetV2's s2
      {1, 8, 48, 17, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, // s1, rows kept
      {3, 4, 16, 16, 48, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}, // 5x5
      {1, 6, 24, 12, 64, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}, // dilated
      {2, 5, 21, 9, 96, 3, 5, 2, 1, 1, 1, 1, 2, 0, 2},  // 3x5, asymmetric
      {1, 3, 30, 30, 24, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1}, // "same" s2, TF's
  };
  const int64_t pwFlags[] = {DIST_RT_CONV_CLIP | DIST_RT_CONV_RELU,
                             DIST_RT_CONV_SILU, 0};
  const int64_t dwFlags[] = {DIST_RT_CONV_CLIP, DIST_RT_CONV_RELU,
                             DIST_RT_CONV_HARDSWISH};
  bool dnnl = !std::getenv("DIST_RT_NO_DNNL");
  for (bool plain : {false, true}) {
    dist_rt::setForcePlainNhwcConv(plain);
    for (const PwDwCase &k : banded)
      for (size_t i = 0; i < std::size(pwFlags); ++i)
        for (bool constant : {false, true}) {
          int64_t runs = checkPwDw(k, pwFlags[i], dwFlags[i], constant);
          EXPECT_EQ(runs, dnnl && !plain ? 2 : 0)
              << caseName(k.pw()) << " then " << caseName(k.dwCase());
        }
  }
  dist_rt::setForcePlainNhwcConv(false);
  // 8 KiB wide: the two calls.
  PwDwCase small{1, 4, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(checkPwDw(small, DIST_RT_CONV_SILU, DIST_RT_CONV_SILU, true), 0);
  // Empty calls write nothing.
  std::vector<float> out(4, 3.0f);
  dist_rt_conv2d_nhwc_pwdw_f32(0, 1, 2, 2, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1,
                               0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 0, 0,
                               int64_t(intptr_t(out.data())));
  EXPECT_EQ(out[0], 3.0f);
  dist_rt::setNhwcCacheBytes(0);
  dist_rt_set_num_threads(0);
}

// 1x1 convolutions of one-pixel images (squeeze-excitation layers) run as
// products with every epilogue flag, on one image and several, writable and
// constant filters, with and without bias; a 3x3 window or padding on a
// one-pixel image, and a 1x1 convolution of a 2 x 2 image, do not.
TEST_P(ConvNhwcTest, OnePixelImagesRunAsProducts) {
  dist_rt_set_num_threads(GetParam());
  const NhwcCase products[] = {
      // groups, n, c, h, w, f, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr
      {1, 1, 96, 1, 1, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  // squeeze
      {1, 1, 4, 1, 1, 96, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  // excite
      {1, 3, 37, 1, 1, 21, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // odd counts
      {1, 8, 64, 1, 1, 80, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0}, // 8 images, s2
  };
  const int64_t flagSets[] = {
      0,
      DIST_RT_CONV_RELU,
      DIST_RT_CONV_CLIP | DIST_RT_CONV_RELU,
      DIST_RT_CONV_SILU,
      DIST_RT_CONV_HARDSWISH | DIST_RT_CONV_CLIP,
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU,
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_SILU,
  };
  for (const NhwcCase &k : products)
    for (int64_t flags : flagSets)
      for (bool constant : {false, true})
        for (bool withBias : {false, true}) {
          int64_t before = dist_rt::onePixelProductCalls();
          EXPECT_EQ(check(k, flags, withBias, constant), 0) << caseName(k);
          EXPECT_EQ(dist_rt::onePixelProductCalls() - before, 2)
              << caseName(k) << " flags " << flags;
        }
  const NhwcCase kept[] = {
      {1, 1, 8, 1, 1, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, // 3x3, padded
      {1, 1, 8, 1, 1, 16, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, // padded
      {1, 2, 8, 2, 2, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, // 2 x 2 pixels
      {4, 1, 8, 1, 1, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  // grouped
  };
  for (const NhwcCase &k : kept) {
    int64_t before = dist_rt::onePixelProductCalls();
    check(k, DIST_RT_CONV_RELU, /*withBias=*/true, /*constantWeights=*/false);
    EXPECT_EQ(dist_rt::onePixelProductCalls(), before) << caseName(k);
  }
  // The plain loop, when asked for, runs them all.
  dist_rt::setForcePlainNhwcConv(true);
  int64_t before = dist_rt::onePixelProductCalls();
  check(products[0], DIST_RT_CONV_RELU, true, false);
  EXPECT_EQ(dist_rt::onePixelProductCalls(), before);
  dist_rt::setForcePlainNhwcConv(false);
  dist_rt_set_num_threads(0);
}

TEST_P(ConvNhwcTest, ConstantFiltersAreReorderedOnce) {
  dist_rt_set_num_threads(GetParam());
  NhwcCase k{1, 1, 32, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<float> in = filled(k.inputs(), 5), w = filled(k.weights(), 6);
  std::vector<float> out(size_t(k.outputs()));
  dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
  size_t held = dist_rt::constantCopyBytes();
  auto call = [&] {
    dist_rt_conv2d_nhwc_f32(1, 1, k.c, k.h, k.w, k.f, 3, 3, 1, 1, 1, 1, 1, 1, 1,
                            1, k.oh(), k.ow(), int64_t(intptr_t(in.data())),
                            int64_t(intptr_t(w.data())), 0,
                            int64_t(intptr_t(out.data())), 0, 0, 0);
  };
  call();
  size_t afterFirst = dist_rt::constantCopyBytes();
  call();
  call();
  EXPECT_EQ(dist_rt::constantCopyBytes(), afterFirst);
  if (dist_rt::dnnlConvolutionCalls() > 0) {
    EXPECT_GT(afterFirst, held) << "oneDNN's filters were not cached";
  }
  dist_rt::unregisterConstantMemory(w.data());
  EXPECT_EQ(dist_rt::constantCopyBytes(), held);
  std::vector<float> want = naive(k, in, w, nullptr, out, 0, 0, 0);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-4) << i;
  dist_rt_set_num_threads(0);
}

// 3x3 convolutions at unit strides on Winograd's primitives (blocked
// images reordered in and out, filters in its layout): always where
// oneDNN offers them, chosen by timing, and always with every image a part
// of its own; all match the naive loop with every epilogue (oneDNN's
// Winograd primitive takes ReLU and the sum: SiLU and Clip stay direct),
// residual sums (the old output reordered in), asymmetric and no padding,
// channel counts that are not multiples of 16, odd image sizes, and
// constant filters. Where oneDNN offers the primitive (asked with a
// 16-channel layer), the calls without an epilogue, with ReLU, with the
// sum and with both ran on it, on every case, in the modes that always
// take it; where it does not, none did.
TEST_P(ConvNhwcTest, WinogradMatchesNaiveLoop) {
  const bool offered = dist_rt::nhwcWinogradOffered();
  const NhwcCase cases[] = {
      // groups, n, c, h, w, f, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr
      {1, 1, 32, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 2, 16, 12, 10, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 1, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 3, 20, 9, 11, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 1, 32, 9, 9, 32, 3, 3, 1, 1, 1, 1, 0, 1, 1, 0},
      {1, 2, 32, 6, 6, 16, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},
      // 6 images: 6, 3 and 2 a thread on 1-3 threads.
      {1, 6, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  };
  const int64_t flagSets[] = {
      0,
      DIST_RT_CONV_RELU,
      DIST_RT_CONV_CLIP | DIST_RT_CONV_RELU,
      DIST_RT_CONV_SILU,
      DIST_RT_CONV_ACCUMULATE,
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU,
  };
  auto winogradTakes = [](int64_t flags) {
    return (flags & ~(DIST_RT_CONV_RELU | DIST_RT_CONV_ACCUMULATE)) == 0;
  };
  for (int mode : {1, 2, 3}) {
    // DnnlTally::finish sets the threads back.
    dist_rt_set_num_threads(GetParam());
    dist_rt::setNhwcWinograd(mode);
    int64_t apartBefore = dist_rt::imagesApartCalls();
    DnnlTally tally;
    for (const NhwcCase &k : cases)
      for (int64_t flags : flagSets)
        for (bool constant : {false, true}) {
          int64_t before = dist_rt::winogradConvolutionCalls();
          tally.add(false, check(k, flags, /*withBias=*/flags != 0, constant));
          int64_t ran = dist_rt::winogradConvolutionCalls() - before;
          if (!offered)
            EXPECT_EQ(ran, 0) << caseName(k) << " flags " << flags;
          else if (mode != 2 && winogradTakes(flags))
            EXPECT_EQ(ran, 2)
                << caseName(k) << " flags " << flags << " mode " << mode;
        }
    tally.finish();
    if (mode == 3 && !std::getenv("DIST_RT_NO_DNNL"))
      EXPECT_GT(dist_rt::imagesApartCalls(), apartBefore)
          << "no call ran one image a part";
  }
  // Never: every call on the direct primitives.
  dist_rt::setNhwcWinograd(0);
  int64_t before = dist_rt::winogradConvolutionCalls();
  check(cases[0], DIST_RT_CONV_RELU, true, false);
  EXPECT_EQ(dist_rt::winogradConvolutionCalls(), before);
  dist_rt::setNhwcWinograd(-1);
  dist_rt_set_num_threads(0);
}

TEST(ConvNhwc, NaNBecomesTheBoundAndEmptyCallsWriteNothing) {
  NhwcCase k{1, 1, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  std::vector<float> in(size_t(k.inputs()), 1.0f), w(size_t(k.weights()), 1);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  // The same on oneDNN and on the plain loop: ReLU gives 0, Clip its lower
  // bound, no flag keeps NaN.
  for (bool plain : {false, true}) {
    dist_rt::setForcePlainNhwcConv(plain);
    for (int64_t flags :
         {int64_t(0), int64_t(DIST_RT_CONV_RELU), int64_t(DIST_RT_CONV_CLIP)}) {
      std::vector<float> out(size_t(k.outputs()), 7.0f);
      dist_rt_conv2d_nhwc_f32(
          1, 1, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 3,
          int64_t(intptr_t(in.data())), int64_t(intptr_t(w.data())), 0,
          int64_t(intptr_t(out.data())), -1.0f, 1.5f, flags);
      for (int i = 0; i < 2; ++i) {
        if (flags == 0)
          EXPECT_TRUE(std::isnan(out[size_t(i)])) << plain;
        else
          EXPECT_EQ(out[size_t(i)], flags == DIST_RT_CONV_RELU ? 0.0f : -1.0f)
              << plain;
      }
      EXPECT_EQ(out[2], flags == DIST_RT_CONV_CLIP ? 1.5f : 2.0f) << plain;
    }
  }
  dist_rt::setForcePlainNhwcConv(false);
  // Likewise a 1x1 convolution of a one-pixel image (run as a product).
  int64_t products = dist_rt::onePixelProductCalls();
  for (int64_t flags :
       {int64_t(0), int64_t(DIST_RT_CONV_RELU), int64_t(DIST_RT_CONV_CLIP)}) {
    std::vector<float> out(2, 7.0f);
    dist_rt_conv2d_nhwc_f32(1, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,
                            1, int64_t(intptr_t(in.data())),
                            int64_t(intptr_t(w.data())), 0,
                            int64_t(intptr_t(out.data())), -1.0f, 1.5f, flags);
    for (float v : out) {
      if (flags == 0)
        EXPECT_TRUE(std::isnan(v));
      else
        EXPECT_EQ(v, flags == DIST_RT_CONV_RELU ? 0.0f : -1.0f);
    }
  }
  EXPECT_EQ(dist_rt::onePixelProductCalls() - products, 3);
  std::vector<float> untouched(size_t(k.outputs()), 7.0f);
  dist_rt_conv2d_nhwc_f32(1, 0, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 3,
                          int64_t(intptr_t(in.data())),
                          int64_t(intptr_t(w.data())), 0,
                          int64_t(intptr_t(untouched.data())), 0, 0, 0);
  for (float v : untouched)
    EXPECT_EQ(v, 7.0f);
}

/// A 3-D or transposed case: spatial arrays (depth, rows, columns), depth
/// 1 for a 2-D call of dist_rt_conv2d_nhwc_f32.
struct SpatialCase {
  bool threeD, transposed;
  int64_t groups, n, c, f;
  int64_t in[3], k[3], st[3], dil[3], padL[3], padR[3];
  int64_t out(int i) const {
    int64_t reach = (k[i] - 1) * dil[i] + 1;
    return transposed ? (in[i] - 1) * st[i] + reach - padL[i] - padR[i]
                      : (in[i] + padL[i] + padR[i] - reach) / st[i] + 1;
  }
  int64_t inputs() const { return n * in[0] * in[1] * in[2] * groups * c; }
  int64_t outputs() const { return n * out(0) * out(1) * out(2) * groups * f; }
  int64_t taps() const { return k[0] * k[1] * k[2]; }
};

/// The naive result of a SpatialCase, by scattering every input position's
/// contribution (a transposed convolution) or gathering every output's
/// window, in double; then the bias, the old output (`old`, when
/// accumulating) and ReLU.
std::vector<float> naiveSpatial(const SpatialCase &k,
                                const std::vector<float> &in,
                                const std::vector<float> &w,
                                const std::vector<float> *bias, bool relu,
                                const std::vector<float> *old) {
  int64_t C = k.groups * k.c, F = k.groups * k.f;
  int64_t O[3] = {k.out(0), k.out(1), k.out(2)};
  std::vector<double> acc(size_t(k.outputs()), 0.0);
  auto outAt = [&](int64_t b, const int64_t (&p)[3], int64_t fo) {
    return size_t((((b * O[0] + p[0]) * O[1] + p[1]) * O[2] + p[2]) * F + fo);
  };
  auto inAt = [&](int64_t b, const int64_t (&p)[3], int64_t ch) {
    return size_t(
        (((b * k.in[0] + p[0]) * k.in[1] + p[1]) * k.in[2] + p[2]) * C + ch);
  };
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t g = 0; g < k.groups; ++g)
      for (int64_t o = 0; o < k.f; ++o)
        for (int64_t ci = 0; ci < k.c; ++ci)
          for (int64_t t = 0; t < k.taps(); ++t) {
            int64_t tap[3] = {t / (k.k[1] * k.k[2]), t / k.k[2] % k.k[1],
                              t % k.k[2]};
            double wv =
                k.transposed
                    ? w[size_t(((g * k.c + ci) * k.f + o) * k.taps() + t)]
                    : w[size_t(((g * k.f + o) * k.c + ci) * k.taps() + t)];
            // Transposed: every input position p adds to output p*st +
            // tap*dil - padL; else every output p reads input p*st +
            // tap*dil - padL.
            int64_t lim[3];
            for (int i = 0; i < 3; ++i)
              lim[i] = k.transposed ? k.in[i] : O[i];
            for (int64_t p0 = 0; p0 < lim[0]; ++p0)
              for (int64_t p1 = 0; p1 < lim[1]; ++p1)
                for (int64_t p2 = 0; p2 < lim[2]; ++p2) {
                  int64_t p[3] = {p0, p1, p2}, q[3];
                  bool inside = true;
                  for (int i = 0; i < 3; ++i) {
                    q[i] = p[i] * k.st[i] + tap[i] * k.dil[i] - k.padL[i];
                    inside = inside && q[i] >= 0 &&
                             q[i] < (k.transposed ? O[i] : k.in[i]);
                  }
                  if (!inside)
                    continue;
                  if (k.transposed)
                    acc[outAt(b, q, g * k.f + o)] +=
                        wv * in[inAt(b, p, g * k.c + ci)];
                  else
                    acc[outAt(b, p, g * k.f + o)] +=
                        wv * in[inAt(b, q, g * k.c + ci)];
                }
          }
  std::vector<float> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    double v = acc[i] + (bias ? (*bias)[i % size_t(F)] : 0.0) +
               (old ? (*old)[i] : 0.0);
    out[i] = float(relu && v < 0 ? 0.0 : v);
  }
  return out;
}

// clang-format off
const SpatialCase kSpatialCases[] = {
    // 3-D, transposed, groups, n, c, f, in, k, st, dil, padL, padR
    {true, false, 1, 1, 3, 8, {6, 9, 9}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
     {1, 1, 1}, {1, 1, 1}},
    {true, false, 1, 2, 4, 5, {5, 7, 6}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1},
     {1, 1, 1}, {1, 0, 1}},
    {true, false, 1, 1, 6, 4, {4, 6, 6}, {1, 3, 3}, {1, 1, 2}, {1, 2, 1},
     {0, 2, 1}, {0, 2, 1}},
    {true, false, 4, 1, 2, 3, {4, 5, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
     {1, 1, 1}, {1, 1, 1}},                     // grouped 3-D
    {false, true, 1, 1, 8, 4, {1, 6, 6}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1},
     {0, 0, 0}, {0, 0, 0}},                     // U-Net's upsampling
    {false, true, 1, 2, 5, 3, {1, 5, 7}, {1, 4, 4}, {1, 2, 2}, {1, 1, 1},
     {0, 1, 1}, {0, 1, 1}},                     // DCGAN's
    {false, true, 1, 1, 3, 6, {1, 7, 6}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1},
     {0, 1, 1}, {0, 1, 1}},                     // stride 1
    {false, true, 1, 1, 4, 2, {1, 9, 5}, {1, 3, 2}, {1, 3, 2}, {1, 2, 1},
     {0, 2, 0}, {0, 0, 1}},                     // dilated, asymmetric
    {false, true, 1, 1, 4, 4, {1, 8, 8}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1},
     {0, 0, 0}, {0, 0, 0}},                     // kernel under the stride
    {false, true, 3, 1, 2, 4, {1, 5, 5}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1},
     {0, 1, 1}, {0, 1, 1}},                     // grouped
    {true, true, 1, 1, 4, 3, {3, 4, 5}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1},
     {0, 0, 0}, {0, 0, 0}},                     // 3-D upsampling
};
// clang-format on

class ConvNhwcSpatialTest : public ::testing::TestWithParam<int> {};

// 3-D and transposed convolutions against the naive loop, on oneDNN (or,
// upsamplings, as a product) and on the plain loop, with and without bias
// and ReLU, adding the old output or not, writable and constant filters;
// with several threads a call of one image splits by output rows (depth
// planes in 3-D).
TEST_P(ConvNhwcSpatialTest, MatchesNaiveLoop) {
  dist_rt_set_num_threads(GetParam());
  DnnlTally tally;
  for (bool plain : {false, true}) {
    dist_rt::setForcePlainNhwcConv(plain);
    for (const SpatialCase &k : kSpatialCases)
      for (int variant = 0; variant < 3; ++variant)
        for (bool constant : {false, true}) {
          bool relu = variant > 0, accumulate = variant == 2;
          std::vector<float> in = filled(k.inputs(), 1),
                             w = filled(k.groups * k.c * k.f * k.taps(), 2),
                             bias = filled(k.groups * k.f, 3);
          std::vector<float> old = filled(k.outputs(), 4), out;
          if (constant)
            dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
          // Calls run by oneDNN or, upsamplings, as a product.
          auto fastCalls = [] {
            return dist_rt::dnnlConvolutionCalls() +
                   dist_rt::upsamplingProductCalls();
          };
          int64_t before = fastCalls();
          int64_t flags = (relu ? DIST_RT_CONV_RELU : 0) |
                          (accumulate ? DIST_RT_CONV_ACCUMULATE : 0) |
                          (k.transposed ? DIST_RT_CONV_TRANSPOSED : 0);
          int64_t inP = int64_t(intptr_t(in.data())),
                  wP = int64_t(intptr_t(w.data())),
                  bP = relu ? int64_t(intptr_t(bias.data())) : 0, oP = 0;
          for (int rep = 0; rep < 2; ++rep) {
            out = old;
            oP = int64_t(intptr_t(out.data()));
            if (k.threeD)
              dist_rt_conv3d_nhwc_f32(
                  k.groups, k.n, k.c, k.in[0], k.in[1], k.in[2], k.f, k.k[0],
                  k.k[1], k.k[2], k.st[0], k.st[1], k.st[2], k.dil[0], k.dil[1],
                  k.dil[2], k.padL[0], k.padL[1], k.padL[2], k.padR[0],
                  k.padR[1], k.padR[2], k.out(0), k.out(1), k.out(2), inP, wP,
                  bP, oP, 0, 0, flags);
            else
              dist_rt_conv2d_nhwc_f32(k.groups, k.n, k.c, k.in[1], k.in[2], k.f,
                                      k.k[1], k.k[2], k.st[1], k.st[2],
                                      k.dil[1], k.dil[2], k.padL[1], k.padL[2],
                                      k.padR[1], k.padR[2], k.out(1), k.out(2),
                                      inP, wP, bP, oP, 0, 0, flags);
          }
          int64_t r = fastCalls() - before;
          if (constant)
            dist_rt::unregisterConstantMemory(w.data());
          std::vector<float> want =
              naiveSpatial(k, in, w, relu ? &bias : nullptr, relu,
                           accumulate ? &old : nullptr);
          double worst = 0;
          for (size_t i = 0; i < want.size(); ++i)
            worst = std::fmax(worst, std::fabs(double(out[i]) - want[i]));
          EXPECT_LE(worst, 1e-4)
              << (k.threeD ? "3-D" : "2-D")
              << (k.transposed ? " transposed" : "") << " c" << k.c << " f"
              << k.f << " k" << k.k[0] << k.k[1] << k.k[2] << " s" << k.st[1]
              << (plain ? " plain" : "");
          tally.add(plain, r);
        }
  }
  tally.finish();
}

INSTANTIATE_TEST_SUITE_P(Threads, ConvNhwcSpatialTest,
                         ::testing::Values(1, 2, 3));

// With 2 and 3 threads a call is split by images or by output rows; 3
// images on 2 threads, or 2 on 3, by whole images and the rows of those
// left over.
INSTANTIATE_TEST_SUITE_P(Threads, ConvNhwcTest, ::testing::Values(1, 2, 3));

} // namespace
