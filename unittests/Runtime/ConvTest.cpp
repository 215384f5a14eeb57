//===- ConvTest.cpp - Tests for dist_rt_conv2d_f32 --------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for the direct convolution: every case is checked
// against a naive double-precision loop, over unit and larger strides,
// dilations, kernels of 1x1 to 5x3, channel and filter counts that are not
// multiples of the register tile, outputs narrower and wider than a vector,
// and every flag combination (bias, accumulate, ReLU, clip), at 1, 2 and 3
// threads. Each case runs with the runtime's own choice of kernel and with
// each kernel forced through its internal switch: the AVX-512 tiles over
// output positions and over filters (where the machine has AVX-512 and the
// shape allows them), the AVX2 depthwise rows (where it has AVX2 and FMA
// and the call has one input channel a group) and the plain loop.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/conv_plan.h"
#include "dist_rt/kernels.h"

#include "internal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

struct ConvCase {
  int64_t n, c, h, w, f, kh, kw, sh, sw, dh, dw;
  /// Groups (c and f count all of them); above 1 the case runs through
  /// dist_rt_conv2d_group_f32.
  int64_t groups = 1;
  int64_t oh() const { return (h - (kh - 1) * dh - 1) / sh + 1; }
  int64_t ow() const { return (w - (kw - 1) * dw - 1) / sw + 1; }
  std::string name() const {
    return "n" + std::to_string(n) + " c" + std::to_string(c) + " " +
           std::to_string(h) + "x" + std::to_string(w) + " f" +
           std::to_string(f) + " k" + std::to_string(kh) + "x" +
           std::to_string(kw) + " s" + std::to_string(sh) + "," +
           std::to_string(sw) + " d" + std::to_string(dh) + "," +
           std::to_string(dw) + " g" + std::to_string(groups);
  }
};

/// Deterministic values in [-1, 1).
void fill(std::vector<float> &values, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1;
  for (float &v : values) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
}

/// The bounds every case passes; DIST_RT_CONV_CLIP applies them.
constexpr float kClipLo = -0.75f, kClipHi = 0.5f;

/// Runs `cc` with `flags` (and a bias when `withBias`) and compares with a
/// double-precision loop. Returns the number of mismatching elements.
int64_t check(const ConvCase &cc, int64_t flags, bool withBias, uint32_t seed,
              int64_t inPad = 0, int64_t outPad = 0,
              bool constantWeights = false) {
  int64_t oh = cc.oh(), ow = cc.ow();
  // Operands with `inPad` / `outPad` extra elements after every row, plane
  // and image (views of larger buffers) when those are not 0.
  int64_t inH = cc.w + inPad, inC = cc.h * inH + inPad,
          inN = cc.c * inC + inPad;
  int64_t outH = ow + outPad, outF = oh * outH + outPad,
          outN = cc.f * outF + outPad;
  int64_t cg = cc.c / cc.groups, fg = cc.f / cc.groups;
  std::vector<float> in(size_t(cc.n * inN));
  std::vector<float> wt(size_t(cc.f * cg * cc.kh * cc.kw));
  std::vector<float> bias(size_t(cc.f));
  std::vector<float> out(size_t(cc.n * outN));
  fill(in, seed);
  fill(wt, seed + 1);
  fill(bias, seed + 2);
  fill(out, seed + 3);
  std::vector<float> old = out;
  // As a parameter file's mapping is (the runtime may pack them once).
  if (constantWeights)
    dist_rt::registerConstantMemory(wt.data(), wt.size() * sizeof(float));
  if (cc.groups == 1)
    dist_rt_conv2d_f32(cc.n, cc.c, cc.h, cc.w, cc.f, cc.kh, cc.kw, cc.sh, cc.sw,
                       cc.dh, cc.dw, oh, ow,
                       reinterpret_cast<intptr_t>(in.data()), inN, inC, inH,
                       reinterpret_cast<intptr_t>(wt.data()),
                       withBias ? reinterpret_cast<intptr_t>(bias.data()) : 0,
                       reinterpret_cast<intptr_t>(out.data()), outN, outF, outH,
                       kClipLo, kClipHi, flags);
  else
    dist_rt_conv2d_group_f32(
        cc.groups, cc.n, cg, cc.h, cc.w, fg, cc.kh, cc.kw, cc.sh, cc.sw, cc.dh,
        cc.dw, oh, ow, reinterpret_cast<intptr_t>(in.data()), inN, cg * inC,
        inC, inH, reinterpret_cast<intptr_t>(wt.data()),
        withBias ? reinterpret_cast<intptr_t>(bias.data()) : 0,
        reinterpret_cast<intptr_t>(out.data()), outN, fg * outF, outF, outH,
        kClipLo, kClipHi, flags);
  if (constantWeights)
    dist_rt::unregisterConstantMemory(wt.data());
  int64_t bad = 0;
  for (int64_t b = 0; b < cc.n; ++b)
    for (int64_t f = 0; f < cc.f; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = 0.0, mag = 0.0;
          int64_t c0 = f / fg * cg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < cc.kh; ++i)
              for (int64_t j = 0; j < cc.kw; ++j) {
                double p =
                    double(wt[size_t(((f * cg + c) * cc.kh + i) * cc.kw + j)]) *
                    double(in[size_t(b * inN + (c0 + c) * inC +
                                     (y * cc.sh + i * cc.dh) * inH + x * cc.sw +
                                     j * cc.dw)]);
                acc += p;
                mag += std::fabs(p);
              }
          size_t at = size_t(b * outN + f * outF + y * outH + x);
          if (flags & DIST_RT_CONV_ACCUMULATE) {
            acc += old[at];
            mag += std::fabs(old[at]);
          }
          if (withBias) {
            acc += bias[size_t(f)];
            mag += std::fabs(bias[size_t(f)]);
          }
          if (flags & DIST_RT_CONV_SILU)
            acc = acc / (1.0 + std::exp(-acc));
          if (flags & DIST_RT_CONV_HARDSWISH)
            acc = acc * std::min(std::max(acc / 6.0 + 0.5, 0.0), 1.0);
          if ((flags & DIST_RT_CONV_RELU) && acc < 0.0)
            acc = 0.0;
          if (flags & DIST_RT_CONV_CLIP)
            acc = std::min(std::max(acc, double(kClipLo)), double(kClipHi));
          double tol = 1e-5 * (mag + 1.0);
          if (!(std::fabs(out[at] - acc) <= tol) ||
              ((flags & DIST_RT_CONV_RELU) && std::signbit(out[at])))
            ++bad;
        }
  // Gaps between rows, planes and images keep their old values.
  for (int64_t b = 0; b < cc.n; ++b)
    for (int64_t f = 0; f < cc.f; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = ow; x < outH; ++x) {
          size_t at = size_t(b * outN + f * outF + y * outH + x);
          if (out[at] != old[at])
            ++bad;
        }
  return bad;
}

const ConvCase kCases[] = {
    // The benchmark CNN's layers (padded inputs).
    {8, 3, 34, 34, 16, 3, 3, 1, 1, 1, 1},
    {8, 16, 18, 18, 16, 3, 3, 1, 1, 1, 1},
    {8, 16, 17, 17, 32, 3, 3, 2, 2, 1, 1},
    {8, 32, 10, 10, 32, 3, 3, 1, 1, 1, 1},
    {8, 16, 15, 15, 32, 1, 1, 2, 2, 1, 1},
    // Odd sizes: filters not a multiple of 4 or 8, one channel, rows
    // narrower than a vector, a single output position, wide rows.
    {1, 1, 5, 5, 1, 3, 3, 1, 1, 1, 1},
    {2, 5, 7, 9, 3, 3, 3, 1, 1, 1, 1},
    {3, 7, 11, 13, 13, 3, 3, 1, 1, 1, 1},
    {1, 4, 3, 3, 9, 3, 3, 1, 1, 1, 1},
    {2, 3, 9, 70, 10, 3, 3, 1, 1, 1, 1},
    // Other kernels, strides (equal or not, 3), dilations and both.
    {2, 6, 12, 12, 8, 5, 3, 1, 1, 1, 1},
    {2, 6, 13, 12, 8, 3, 3, 3, 2, 1, 1},
    {2, 6, 12, 14, 12, 3, 3, 1, 1, 2, 3},
    {2, 4, 15, 16, 8, 3, 2, 2, 3, 2, 2},
    {1, 3, 20, 20, 6, 1, 1, 1, 1, 1, 1},
    {1, 2, 21, 22, 5, 7, 7, 2, 2, 1, 1},
    // An image past 256 KiB padded (codegen sends such layers here when
    // their im2col columns would be large).
    {1, 4, 136, 136, 8, 3, 3, 1, 1, 1, 1},
    // Depthwise (one channel and filter a group): 3x3 at unit and double
    // strides, 5x5, dilated, rows wider than several vectors.
    {2, 6, 10, 10, 6, 3, 3, 1, 1, 1, 1, 6},
    {1, 5, 17, 17, 5, 3, 3, 2, 2, 1, 1, 5},
    {2, 3, 11, 40, 3, 5, 5, 1, 1, 1, 1, 3},
    {1, 4, 14, 13, 4, 3, 3, 1, 1, 2, 2, 4},
    {1, 3, 9, 9, 3, 7, 7, 2, 1, 1, 1, 3},
    // Depthwise rows on AVX2: outputs of 7 and 14 columns (a vector's
    // part), 4k+3 rows, stride 2 on odd widths, 5x5 at stride 2, a channel
    // multiplier, unequal strides, 1x1, one input channel without groups.
    {1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 8},
    {2, 4, 16, 16, 4, 3, 3, 1, 1, 1, 1, 4},
    {1, 2, 29, 11, 2, 3, 3, 1, 1, 1, 1, 2},
    {1, 3, 29, 29, 3, 3, 3, 2, 2, 1, 1, 3},
    {1, 2, 23, 41, 2, 5, 5, 2, 2, 1, 1, 2},
    {1, 3, 13, 13, 6, 3, 3, 1, 1, 1, 1, 3},
    {1, 2, 12, 12, 2, 3, 3, 1, 2, 1, 1, 2},
    {1, 5, 6, 19, 5, 1, 1, 1, 1, 1, 1, 5},
    {2, 1, 12, 20, 3, 3, 3, 1, 1, 1, 1},
    // Depthwise rows on AVX-512 by blocks of rows: 58 columns (a block of
    // two vectors and one of a vector and 10 lanes), 35 (a block with an
    // empty second vector), rows not a multiple of the block's, 5x5 on
    // rows of 12.
    {1, 3, 31, 60, 3, 3, 3, 1, 1, 1, 1, 3},
    {2, 2, 13, 37, 2, 3, 3, 1, 1, 1, 1, 2},
    {1, 2, 14, 16, 4, 5, 5, 1, 1, 1, 1, 2},
    // ... and at strides of 2: 37 columns (a block of two vectors, then
    // one of 5 lanes), 10 rows, odd and even input widths, 5x5.
    {1, 2, 21, 75, 2, 3, 3, 2, 2, 1, 1, 2},
    {2, 3, 12, 36, 3, 3, 3, 2, 2, 1, 1, 3},
    {1, 2, 15, 70, 2, 5, 5, 2, 2, 1, 1, 2},
    // Grouped: 8 channels a group (blocks of 8 filters), 2 filters a
    // group from 1 channel (a channel multiplier), odd group sizes.
    {2, 16, 10, 10, 16, 3, 3, 1, 1, 1, 1, 2},
    {1, 4, 9, 12, 8, 3, 3, 1, 1, 1, 1, 4},
    {2, 9, 8, 11, 15, 3, 3, 2, 2, 1, 1, 3},
    {1, 12, 7, 7, 24, 1, 1, 1, 1, 1, 1, 4},
    // Pointwise (1x1) on images larger than a panel of the host's cache
    // at some thread counts: many channels, positions not a multiple of
    // a tile, a strided one.
    {2, 96, 30, 30, 20, 1, 1, 1, 1, 1, 1},
    {1, 160, 13, 11, 37, 1, 1, 2, 2, 1, 1},
};

class ConvTest : public ::testing::TestWithParam<dist_rt::ConvKernel> {
protected:
  void SetUp() override { dist_rt::setConvKernel(GetParam()); }
  void TearDown() override {
    dist_rt::setConvKernel(dist_rt::ConvKernel::Auto);
    dist_rt::setConvPanelBytes(0);
    dist_rt_set_num_threads(0);
  }
};

TEST_P(ConvTest, MatchesNaiveLoop) {
  const int64_t flagSets[] = {0,
                              DIST_RT_CONV_ACCUMULATE,
                              DIST_RT_CONV_RELU,
                              DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU,
                              DIST_RT_CONV_CLIP,
                              DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_CLIP,
                              DIST_RT_CONV_RELU | DIST_RT_CONV_CLIP,
                              DIST_RT_CONV_SILU,
                              DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_SILU,
                              DIST_RT_CONV_HARDSWISH,
                              DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_HARDSWISH |
                                  DIST_RT_CONV_CLIP};
  uint32_t seed = 1;
  for (int threads : {1, 2, 3}) {
    dist_rt_set_num_threads(threads);
    for (const ConvCase &cc : kCases)
      for (int64_t flags : flagSets)
        for (bool bias : {false, true}) {
          ++seed;
          EXPECT_EQ(check(cc, flags, bias, seed), 0)
              << cc.name() << " flags " << flags << " bias " << bias
              << " threads " << threads;
        }
  }
}

TEST_P(ConvTest, SmallPanelsMatchNaiveLoop) {
  // Panels of 2 to 16 KiB of input split every case's positions into
  // several panels (the last one narrower), so tiles run panel by panel
  // (and a thread's run of tiles starts and ends inside panels).
  uint32_t seed = 500;
  for (size_t bytes : {2048, 5000, 16384}) {
    dist_rt::setConvPanelBytes(bytes);
    for (int threads : {1, 3}) {
      dist_rt_set_num_threads(threads);
      for (const ConvCase &cc : kCases) {
        ++seed;
        EXPECT_EQ(check(cc, DIST_RT_CONV_RELU | DIST_RT_CONV_CLIP, true, seed),
                  0)
            << cc.name() << " panel bytes " << bytes << " threads " << threads;
      }
    }
  }
  dist_rt::setConvPanelBytes(0);
}

TEST_P(ConvTest, ClipKeepsNaNAndBoundsBothSides) {
  // ONNX's Clip: below lo becomes lo, above hi becomes hi, NaN stays.
  ConvCase cc{1, 1, 6, 6, 3, 3, 3, 1, 1, 1, 1};
  std::vector<float> in(36, 1.0f), wt(27, 0.0f), bias{-5.0f, 0.25f, 9.0f};
  std::vector<float> out(48, 7.0f);
  in[35] = std::numeric_limits<float>::quiet_NaN();
  dist_rt_conv2d_f32(cc.n, cc.c, cc.h, cc.w, cc.f, cc.kh, cc.kw, 1, 1, 1, 1, 4,
                     4, reinterpret_cast<intptr_t>(in.data()), 36, 36, 6,
                     reinterpret_cast<intptr_t>(wt.data()),
                     reinterpret_cast<intptr_t>(bias.data()),
                     reinterpret_cast<intptr_t>(out.data()), 48, 16, 4, 0.0f,
                     6.0f, DIST_RT_CONV_CLIP);
  const float expected[3] = {0.0f, 0.25f, 6.0f};
  for (int f = 0; f < 3; ++f)
    for (int p = 0; p < 16; ++p) {
      float v = out[size_t(f * 16 + p)];
      // The NaN input reaches (times a zero weight) the last position.
      if (p == 15)
        EXPECT_TRUE(std::isnan(v)) << "filter " << f;
      else
        EXPECT_EQ(v, expected[f]) << "filter " << f << " position " << p;
    }
}

TEST_P(ConvTest, StridedOperandsMatchNaiveLoop) {
  // Inputs and outputs that are views of larger buffers (rows, planes and
  // images followed by gaps), at 1 and 2 threads.
  uint32_t seed = 1000;
  for (int threads : {1, 2}) {
    dist_rt_set_num_threads(threads);
    for (const ConvCase &cc : kCases)
      for (int64_t pads : {1, 5, 19}) {
        ++seed;
        EXPECT_EQ(check(cc, DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU, true,
                        seed, pads, pads + 1),
                  0)
            << cc.name() << " gaps " << pads << " threads " << threads;
        EXPECT_EQ(check(cc, 0, false, seed, 0, pads), 0)
            << cc.name() << " output gaps " << pads << " threads " << threads;
      }
  }
}

TEST_P(ConvTest, ConstantWeightsArePackedOnce) {
  // Weights in registered constant memory (a parameter file) are packed
  // once and the packed copy reused; once the range is unregistered the
  // copy goes and new weights there are used.
  ConvCase cc{2, 8, 10, 10, 24, 3, 3, 1, 1, 1, 1};
  int64_t oh = cc.oh(), ow = cc.ow();
  std::vector<float> in(size_t(cc.n * cc.c * cc.h * cc.w));
  std::vector<float> wt(size_t(cc.f * cc.c * 9)),
      out(size_t(cc.n * cc.f * oh * ow));
  fill(in, 7);
  fill(wt, 8);
  auto run = [&] {
    dist_rt_conv2d_f32(cc.n, cc.c, cc.h, cc.w, cc.f, 3, 3, 1, 1, 1, 1, oh, ow,
                       reinterpret_cast<intptr_t>(in.data()),
                       cc.c * cc.h * cc.w, cc.h * cc.w, cc.w,
                       reinterpret_cast<intptr_t>(wt.data()), 0,
                       reinterpret_cast<intptr_t>(out.data()), cc.f * oh * ow,
                       oh * ow, ow, 0.0f, 0.0f, 0);
    return out[size_t(3 * oh * ow + ow + 1)];
  };
  auto naive = [&] {
    double acc = 0;
    for (int64_t c = 0; c < cc.c; ++c)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          acc += double(wt[size_t(((3 * cc.c + c) * 3 + i) * 3 + j)]) *
                 in[size_t((c * cc.h + 1 + i) * cc.w + 1 + j)];
    return acc;
  };
  size_t before = dist_rt::constantCopyBytes();
  dist_rt::registerConstantMemory(wt.data(), wt.size() * sizeof(float));
  EXPECT_NEAR(run(), naive(), 1e-4);
  size_t cached = dist_rt::constantCopyBytes() - before;
  // Only the AVX-512 kernels pack (the products read the weights as they
  // are).
#if defined(__x86_64__)
  bool packs = GetParam() != dist_rt::ConvKernel::Plain &&
               GetParam() != dist_rt::ConvKernel::Product &&
               (dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512);
#else
  bool packs = false;
#endif
  if (packs)
    EXPECT_GE(cached, wt.size() * sizeof(float));
  else
    EXPECT_EQ(cached, 0u);
  EXPECT_NEAR(run(), naive(), 1e-4);
  EXPECT_EQ(dist_rt::constantCopyBytes() - before, cached);
  dist_rt::unregisterConstantMemory(wt.data());
  EXPECT_EQ(dist_rt::constantCopyBytes(), before);
  for (float &v : wt)
    v = -v;
  EXPECT_NEAR(run(), naive(), 1e-4);
  EXPECT_EQ(dist_rt::constantCopyBytes(), before);
}

TEST_P(ConvTest, ConstantWeightsMatchNaiveLoop) {
  // Weights in constant memory, as a parameter file's: on hosts with the
  // packed product kernel (AVX2 and FMA, no AVX-512) calls that run as
  // products use the filters packed once, with the bias, the old output
  // and the activation applied as the product's tiles are stored, also
  // into outputs inside larger buffers (rows of the image apart) and in
  // small panels. Every case against the double-precision loop.
  dist_rt::PackedGemmMinWorkScope allProducts(0);
  const int64_t flagSets[] = {0, DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU,
                              DIST_RT_CONV_CLIP,
                              DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_CLIP};
  int64_t before = dist_rt::packedGemmCalls();
  uint32_t seed = 3000;
  for (int threads : {1, 3})
    for (size_t bytes : {0, 5000}) {
      dist_rt_set_num_threads(threads);
      dist_rt::setConvPanelBytes(bytes);
      for (const ConvCase &cc : kCases)
        for (int64_t flags : flagSets)
          for (int64_t outPad : {0, 3}) {
            ++seed;
            EXPECT_EQ(check(cc, flags, seed % 2 == 0, seed, 0, outPad,
                            /*constantWeights=*/true),
                      0)
                << cc.name() << " flags " << flags << " output gaps " << outPad
                << " panel bytes " << bytes << " threads " << threads;
          }
    }
  dist_rt::setConvPanelBytes(0);
  // Forced products do run on the packed filters where the kernel runs.
  if (GetParam() == dist_rt::ConvKernel::Product &&
      dist_rt::packedSgemmAAvailable())
    EXPECT_GT(dist_rt::packedGemmCalls(), before);
  RecordProperty("packed", dist_rt::packedGemmCalls() > before ? "yes" : "no");
}

/// Runs the weight gradient of `cc` (dy with `gap` extra elements after
/// every row, plane and image) and compares with a double-precision loop.
/// Returns the number of mismatching elements.
int64_t checkGrad(const ConvCase &cc, bool accumulate, uint32_t seed,
                  int64_t gap) {
  int64_t oh = cc.oh(), ow = cc.ow();
  int64_t dyH = ow + gap, dyF = oh * dyH + gap, dyN = cc.f * dyF + gap;
  std::vector<float> in(size_t(cc.n * cc.c * cc.h * cc.w));
  std::vector<float> dy(size_t(cc.n * dyN));
  std::vector<float> dw(size_t(cc.f * cc.c * cc.kh * cc.kw));
  fill(in, seed);
  fill(dy, seed + 1);
  fill(dw, seed + 2);
  std::vector<float> old = dw;
  dist_rt_conv2d_wgrad_f32(
      cc.n, cc.c, cc.h, cc.w, cc.f, cc.kh, cc.kw, cc.sh, cc.sw, cc.dh, cc.dw,
      oh, ow, reinterpret_cast<intptr_t>(in.data()), cc.c * cc.h * cc.w,
      cc.h * cc.w, cc.w, reinterpret_cast<intptr_t>(dy.data()), dyN, dyF, dyH,
      reinterpret_cast<intptr_t>(dw.data()),
      accumulate ? DIST_RT_CONV_ACCUMULATE : 0);
  int64_t bad = 0;
  for (int64_t f = 0; f < cc.f; ++f)
    for (int64_t c = 0; c < cc.c; ++c)
      for (int64_t i = 0; i < cc.kh; ++i)
        for (int64_t j = 0; j < cc.kw; ++j) {
          size_t at = size_t(((f * cc.c + c) * cc.kh + i) * cc.kw + j);
          double acc = accumulate ? old[at] : 0.0;
          double mag = std::fabs(acc);
          for (int64_t b = 0; b < cc.n; ++b)
            for (int64_t y = 0; y < oh; ++y)
              for (int64_t x = 0; x < ow; ++x) {
                double p =
                    double(dy[size_t(b * dyN + f * dyF + y * dyH + x)]) *
                    in[size_t(((b * cc.c + c) * cc.h + y * cc.sh + i * cc.dh) *
                                  cc.w +
                              x * cc.sw + j * cc.dw)];
                acc += p;
                mag += std::fabs(p);
              }
          if (!(std::fabs(dw[at] - acc) <= 1e-5 * (mag + 1.0)))
            ++bad;
        }
  return bad;
}

TEST_P(ConvTest, WeightGradientMatchesNaiveLoop) {
  uint32_t seed = 2000;
  for (int threads : {1, 2, 3}) {
    dist_rt_set_num_threads(threads);
    for (const ConvCase &cc : kCases) {
      // The weight gradient has no groups (codegen runs a grouped one as
      // loops).
      if (cc.groups != 1)
        continue;
      for (bool accumulate : {false, true})
        for (int64_t gap : {0, 3}) {
          ++seed;
          EXPECT_EQ(checkGrad(cc, accumulate, seed, gap), 0)
              << cc.name() << " accumulate " << accumulate << " gap " << gap
              << " threads " << threads;
        }
    }
  }
}

TEST_P(ConvTest, ReluKeepsNaNAndClearsNegatives) {
  // A NaN in the input reaches every output whose window covers it; ReLU
  // keeps it. Negative sums become +0.
  ConvCase cc{1, 1, 6, 6, 2, 3, 3, 1, 1, 1, 1};
  std::vector<float> in(36, 0.0f), wt(18, 1.0f), bias{-0.0f, -1.0f};
  std::vector<float> out(32, 7.0f);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  dist_rt_conv2d_f32(cc.n, cc.c, cc.h, cc.w, cc.f, cc.kh, cc.kw, 1, 1, 1, 1, 4,
                     4, reinterpret_cast<intptr_t>(in.data()), 36, 36, 6,
                     reinterpret_cast<intptr_t>(wt.data()),
                     reinterpret_cast<intptr_t>(bias.data()),
                     reinterpret_cast<intptr_t>(out.data()), 32, 16, 4, 0.0f,
                     0.0f, DIST_RT_CONV_RELU);
  for (int f = 0; f < 2; ++f)
    for (int p = 0; p < 16; ++p) {
      float v = out[size_t(f * 16 + p)];
      if (p == 0)
        EXPECT_TRUE(std::isnan(v)) << "filter " << f;
      else
        EXPECT_TRUE(v == 0.0f && !std::signbit(v))
            << "filter " << f << " position " << p << " value " << v;
    }
}

TEST_P(ConvTest, SiluKeepsNaNAndInfinities) {
  // SiLU, v * (1 / (1 + exp(-v))): NaN stays, +inf stays, values past
  // exp's range go to v and to -0, as ONNX's Sigmoid then Mul.
  ConvCase cc{1, 1, 6, 6, 6, 3, 3, 1, 1, 1, 1};
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> in(36, 0.0f), wt(54, 0.0f),
      bias{-200.0f, -3.0f, 0.5f, 100.0f, inf, 0.0f};
  std::vector<float> out(96, 7.0f);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  // Filter 5 reads the NaN (weight 1 on the first tap).
  wt[45] = 1.0f;
  dist_rt_conv2d_f32(cc.n, cc.c, cc.h, cc.w, cc.f, cc.kh, cc.kw, 1, 1, 1, 1, 4,
                     4, reinterpret_cast<intptr_t>(in.data()), 36, 36, 6,
                     reinterpret_cast<intptr_t>(wt.data()),
                     reinterpret_cast<intptr_t>(bias.data()),
                     reinterpret_cast<intptr_t>(out.data()), 96, 16, 4, 0.0f,
                     0.0f, DIST_RT_CONV_SILU);
  for (int p = 0; p < 16; ++p) {
    // In[0] times the other filters' zero weights is NaN at position 0.
    bool nan = p == 0;
    auto at = [&](int f) { return out[size_t(f * 16 + p)]; };
    if (nan) {
      for (int f = 0; f < 6; ++f)
        EXPECT_TRUE(std::isnan(at(f))) << "filter " << f;
      continue;
    }
    EXPECT_TRUE(at(0) == 0.0f && std::signbit(at(0))) << at(0);
    EXPECT_NEAR(at(1), -3.0 / (1.0 + std::exp(3.0)), 1e-6);
    EXPECT_NEAR(at(2), 0.5 / (1.0 + std::exp(-0.5)), 1e-6);
    EXPECT_EQ(at(3), 100.0f);
    EXPECT_EQ(at(4), inf);
    EXPECT_EQ(at(5), 0.0f);
  }
}

TEST_P(ConvTest, HardSwishKeepsNaNAndInfinities) {
  // HardSwish, v * max(0, min(1, v / 6 + 1 / 2)), as ONNX's HardSwish
  // lowered: NaN stays, +inf stays, -inf becomes NaN (-inf * 0), values
  // at or below -3 become -0, values at or above 3 stay.
  ConvCase cc{1, 1, 6, 6, 6, 3, 3, 1, 1, 1, 1};
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> in(36, 0.0f), wt(54, 0.0f),
      bias{-200.0f, -1.5f, 2.0f, 3.0f, inf, -inf};
  std::vector<float> out(96, 7.0f);
  in[0] = std::numeric_limits<float>::quiet_NaN();
  dist_rt_conv2d_f32(cc.n, cc.c, cc.h, cc.w, cc.f, cc.kh, cc.kw, 1, 1, 1, 1, 4,
                     4, reinterpret_cast<intptr_t>(in.data()), 36, 36, 6,
                     reinterpret_cast<intptr_t>(wt.data()),
                     reinterpret_cast<intptr_t>(bias.data()),
                     reinterpret_cast<intptr_t>(out.data()), 96, 16, 4, 0.0f,
                     0.0f, DIST_RT_CONV_HARDSWISH);
  for (int p = 0; p < 16; ++p) {
    auto at = [&](int f) { return out[size_t(f * 16 + p)]; };
    if (p == 0) {
      // In[0] times the zero weights is NaN at position 0.
      for (int f = 0; f < 6; ++f)
        EXPECT_TRUE(std::isnan(at(f))) << "filter " << f;
      continue;
    }
    EXPECT_TRUE(at(0) == 0.0f && std::signbit(at(0))) << at(0);
    EXPECT_NEAR(at(1), -1.5 * 0.25, 1e-6);
    EXPECT_NEAR(at(2), 2.0 * (2.0 / 6.0 + 0.5), 1e-6);
    EXPECT_EQ(at(3), 3.0f);
    EXPECT_EQ(at(4), inf);
    EXPECT_TRUE(std::isnan(at(5))) << at(5);
  }
}

TEST_P(ConvTest, EmptyCallsWriteNothing) {
  std::vector<float> out(4, 3.0f);
  float in = 1.0f, wt = 1.0f;
  dist_rt_conv2d_f32(
      0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, reinterpret_cast<intptr_t>(&in), 1,
      1, 1, reinterpret_cast<intptr_t>(&wt), 0,
      reinterpret_cast<intptr_t>(out.data()), 1, 1, 1, 0.0f, 0.0f, 0);
  for (float v : out)
    EXPECT_EQ(v, 3.0f);
}

TEST_P(ConvTest, ProductsRunWhereNoKernelTakesTheCall) {
  // Forced, every call runs as products by panels. Otherwise, unless the
  // plain loop is forced, calls that are not depthwise do on a host
  // without AVX-512 (the tiles need it; the AVX2 rows take only depthwise
  // calls), and depthwise ones never (the AVX2 rows or the loop).
  ConvCase pointwise{1, 8, 9, 9, 16, 1, 1, 1, 1, 1, 1};
  ConvCase strided{2, 5, 11, 10, 7, 3, 3, 2, 1, 1, 1};
  ConvCase grouped{1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 2};
  ConvCase depthwise{1, 6, 9, 9, 6, 3, 3, 1, 1, 1, 1, 6};
#if defined(__x86_64__)
  bool avx512 = (dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512);
#else
  bool avx512 = false;
#endif
  dist_rt::ConvKernel k = GetParam();
  uint32_t seed = 900;
  // Without the timing of the tiles against the products (the next test).
  dist_rt::setConvTuning(false);
  for (const ConvCase &cc : {pointwise, strided, grouped, depthwise}) {
    bool isDepthwise = cc.groups == cc.c && cc.groups == cc.f;
    bool want = k == dist_rt::ConvKernel::Product ||
                (k != dist_rt::ConvKernel::Plain && !avx512 && !isDepthwise);
    int64_t before = dist_rt::productConvCalls();
    EXPECT_EQ(check(cc, DIST_RT_CONV_RELU, true, ++seed), 0) << cc.name();
    EXPECT_EQ(dist_rt::productConvCalls() - before, want ? 1 : 0) << cc.name();
  }
  dist_rt::setConvTuning(true);
}

// On an AVX-512 host the first calls of a geometry alternate the tiles and
// products by panels, two each, and the rest run the faster of them, every
// call right; depthwise calls and calls with tuning off never alternate
// (forced kernels never do either: ProductsRunWhereNoKernelTakesTheCall).
// Elsewhere every dense call here runs as products, no depthwise one.
TEST(ConvTuning, TimesTheTilesAgainstProductsOnce) {
#if defined(__x86_64__)
  bool avx512 = (dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512);
#else
  bool avx512 = false;
#endif
  dist_rt::setConvKernel(dist_rt::ConvKernel::Auto);
  dist_rt_set_num_threads(1);
  // Sizes no other test uses, so that the geometry is new here.
  ConvCase dense{1, 9, 13, 12, 11, 3, 3, 1, 1, 1, 1};
  ConvCase depthwise{1, 7, 13, 12, 7, 3, 3, 1, 1, 1, 1, 7};
  uint32_t seed = 1300;
  auto productsOver = [&](const ConvCase &cc, int calls) {
    int64_t before = dist_rt::productConvCalls();
    for (int i = 0; i < calls; ++i)
      EXPECT_EQ(check(cc, DIST_RT_CONV_RELU, true, ++seed), 0)
          << cc.name() << " call " << i;
    return dist_rt::productConvCalls() - before;
  };
  if (avx512) {
    EXPECT_EQ(productsOver(dense, 1), 0) << "the first trial runs the tiles";
    EXPECT_EQ(productsOver(dense, 3), 2) << "then the products, alternating";
    int64_t after = productsOver(dense, 5);
    EXPECT_TRUE(after == 0 || after == 5) << "one way after the trials";
    RecordProperty("chose", after == 5 ? "products" : "tiles");
    EXPECT_EQ(productsOver(depthwise, 6), 0);
    dist_rt::setConvTuning(false);
    ConvCase untuned{1, 9, 13, 12, 13, 3, 3, 1, 1, 1, 1};
    EXPECT_EQ(productsOver(untuned, 6), 0);
    dist_rt::setConvTuning(true);
  } else {
    EXPECT_EQ(productsOver(dense, 6), 6);
    EXPECT_EQ(productsOver(depthwise, 6), 0);
  }
  dist_rt_set_num_threads(0);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, ConvTest,
    ::testing::Values(dist_rt::ConvKernel::Auto, dist_rt::ConvKernel::Positions,
                      dist_rt::ConvKernel::Filters, dist_rt::ConvKernel::Plain,
                      dist_rt::ConvKernel::Avx2, dist_rt::ConvKernel::Product),
    [](const ::testing::TestParamInfo<dist_rt::ConvKernel> &info) {
      switch (info.param) {
      case dist_rt::ConvKernel::Auto:
        return std::string("Auto");
      case dist_rt::ConvKernel::Positions:
        return std::string("Positions");
      case dist_rt::ConvKernel::Filters:
        return std::string("Filters");
      case dist_rt::ConvKernel::Avx2:
        return std::string("Avx2");
      case dist_rt::ConvKernel::Product:
        return std::string("Product");
      default:
        return std::string("Plain");
      }
    });

} // namespace

TEST(ConvPlanTest, PanelOrderRunsEveryTileOnceAndPanelByPanel) {
  // Every (image, group, block, chunk) exactly once; within an image and
  // group, a panel's tiles (every block) all come before the next panel's.
  for (int64_t groups : {1, 3})
    for (int64_t blocks : {1, 2, 5})
      for (int64_t chunks : {1, 4, 7, 12})
        for (int64_t panel : {int64_t(1), int64_t(3), int64_t(5), chunks}) {
          if (panel > chunks)
            continue;
          int64_t images = 2, items = images * groups * blocks * chunks;
          std::vector<int> seen(size_t(items), 0);
          int64_t lastPanel = -1, lastKey = -1;
          for (int64_t item = 0; item < items; ++item) {
            dist_rt::conv_plan::TileIndex t = dist_rt::conv_plan::panelTile(
                item, groups, blocks, chunks, panel);
            ASSERT_TRUE(t.image >= 0 && t.image < images && t.group >= 0 &&
                        t.group < groups && t.block >= 0 && t.block < blocks &&
                        t.chunk >= 0 && t.chunk < chunks)
                << "item " << item;
            ++seen[size_t(((t.image * groups + t.group) * blocks + t.block) *
                              chunks +
                          t.chunk)];
            int64_t key = t.image * groups + t.group;
            if (key != lastKey)
              lastPanel = -1;
            EXPECT_GE(t.chunk / panel, lastPanel)
                << "groups " << groups << " blocks " << blocks << " chunks "
                << chunks << " panel " << panel << " item " << item;
            lastPanel = t.chunk / panel;
            lastKey = key;
          }
          for (int count : seen)
            EXPECT_EQ(count, 1) << "groups " << groups << " blocks " << blocks
                                << " chunks " << chunks << " panel " << panel;
        }
}

TEST(ConvPlanTest, PanelsFitTheBudget) {
  // 64 channels of one plane, reach 2: (4096 / 64 - 2) / 16 = 3 chunks.
  EXPECT_EQ(dist_rt::conv_plan::panelChunks(4096, 64, 1, 2, 16, 10), 3);
  // At least one chunk, at most all of them.
  EXPECT_EQ(dist_rt::conv_plan::panelChunks(100, 64, 1, 2, 16, 10), 1);
  EXPECT_EQ(dist_rt::conv_plan::panelChunks(1 << 30, 64, 4, 2, 16, 10), 10);
}
