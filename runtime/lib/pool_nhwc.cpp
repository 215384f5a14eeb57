//===- pool_nhwc.cpp - Channels-last max pooling ----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_maxpool2d_nhwc_f32: ONNX's 2-D MaxPool (strides,
// dilations, padding, ceil mode) over dense channels-last images, each
// window clipped to the image instead of read through a padded copy.
//
// Why a call and not the generated loop: the loop reads a copy of the image
// inside a border of -inf, and that copy is a pass over the whole image
// that the layer before cannot fold (a convolution's call writes dense
// images only, so its ReLU stayed a loop of its own that wrote the copy).
// ResNet-50 at batch 8, one thread, AMD EPYC (family 26): the stem's ReLU
// into the bordered copy took 6.5 ms an inference beside 3.5 ms for the
// pooling. oneDNN's pooling primitive would also clip its windows, but its
// max is the instruction's, which drops NaN; ONNX's (and the generated
// loop's arith.maximumf) keeps it.
//
// Each output pixel's channels are a vector: AVX-512 where the CPU has it
// (16 channels a step), else a loop the compiler vectorises. Rows of
// output pixels split over the runtime's thread pool.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "profile.h"

#include "dist_rt/kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {

struct PoolJob {
  int64_t n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow;
  const float *in;
  float *out;
  bool avx512;
};

/// IEEE 754-2019 maximum of `a` and `b` (arith.maximumf): NaN if either is,
/// +0 above -0.
inline float maximum1(float a, float b) {
  if (a != a || b != b)
    return a + b;
  if (a == b) {
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    x &= y;
    std::memcpy(&a, &x, 4);
    return a;
  }
  return a > b ? a : b;
}

__attribute__((target("avx512f"))) inline __m512 maximum16(__m512 a, __m512 b) {
  __m512 r = _mm512_max_ps(a, b);
  // Equal values (a zero of either sign): their AND, +0 unless both are -0.
  __mmask16 eq = _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
  r = _mm512_mask_mov_ps(r, eq,
                         _mm512_castsi512_ps(_mm512_and_si512(
                             _mm512_castps_si512(a), _mm512_castps_si512(b))));
  // NaN in either: their sum (a NaN).
  __mmask16 nan = _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
  return _mm512_mask_add_ps(r, nan, a, b);
}

/// The first tap of a window along one dimension that lies in the image
/// (position o * s - p + t * d in [0, size)), and the tap after its last.
inline void tapRange(int64_t o, int64_t s, int64_t p, int64_t d, int64_t k,
                     int64_t size, int64_t &t0, int64_t &t1) {
  int64_t start = o * s - p;
  t0 = start >= 0 ? 0 : (-start + d - 1) / d;
  int64_t last = size - 1 - start; // the largest t * d allowed
  t1 = last < 0 ? 0 : std::min<int64_t>(k, last / d + 1);
  if (t1 < t0)
    t1 = t0;
}

/// One output pixel's channels over its window's taps in the image.
__attribute__((target("avx512f"))) void
windowAvx512(const PoolJob &j, const float *img, float *o, int64_t y0,
             int64_t ty0, int64_t ty1, int64_t x0, int64_t tx0, int64_t tx1) {
  const int64_t C = j.c;
  int64_t ch = 0;
  for (; ch + 16 <= C; ch += 16) {
    __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int64_t ty = ty0; ty < ty1; ++ty) {
      const float *row = img + (y0 + ty * j.dh) * j.w * C + ch;
      for (int64_t tx = tx0; tx < tx1; ++tx)
        m = maximum16(m, _mm512_loadu_ps(row + (x0 + tx * j.dw) * C));
    }
    _mm512_storeu_ps(o + ch, m);
  }
  if (ch < C) {
    __mmask16 tail = __mmask16((1u << (C - ch)) - 1);
    __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int64_t ty = ty0; ty < ty1; ++ty) {
      const float *row = img + (y0 + ty * j.dh) * j.w * C + ch;
      for (int64_t tx = tx0; tx < tx1; ++tx)
        m = maximum16(m,
                      _mm512_maskz_loadu_ps(tail, row + (x0 + tx * j.dw) * C));
    }
    _mm512_mask_storeu_ps(o + ch, tail, m);
  }
}

void windowPlain(const PoolJob &j, const float *img, float *o, int64_t y0,
                 int64_t ty0, int64_t ty1, int64_t x0, int64_t tx0,
                 int64_t tx1) {
  const int64_t C = j.c;
  std::fill(o, o + C, -std::numeric_limits<float>::infinity());
  for (int64_t ty = ty0; ty < ty1; ++ty) {
    const float *row = img + (y0 + ty * j.dh) * j.w * C;
    for (int64_t tx = tx0; tx < tx1; ++tx) {
      const float *p = row + (x0 + tx * j.dw) * C;
      for (int64_t ch = 0; ch < C; ++ch)
        o[ch] = maximum1(o[ch], p[ch]);
    }
  }
}

/// Output rows [begin, end) of all images (b * oh + y).
void poolRows(void *ctx, int64_t begin, int64_t end) {
  const PoolJob &j = *static_cast<const PoolJob *>(ctx);
  for (int64_t r = begin; r < end; ++r) {
    int64_t b = r / j.oh, y = r % j.oh;
    const float *img = j.in + b * j.h * j.w * j.c;
    float *o = j.out + r * j.ow * j.c;
    int64_t ty0, ty1;
    tapRange(y, j.sh, j.pt, j.dh, j.kh, j.h, ty0, ty1);
    int64_t y0 = y * j.sh - j.pt;
    for (int64_t x = 0; x < j.ow; ++x, o += j.c) {
      int64_t tx0, tx1;
      tapRange(x, j.sw, j.pl, j.dw, j.kw, j.w, tx0, tx1);
      int64_t x0 = x * j.sw - j.pl;
      if (j.avx512)
        windowAvx512(j, img, o, y0, ty0, ty1, x0, tx0, tx1);
      else
        windowPlain(j, img, o, y0, ty0, ty1, x0, tx0, tx1);
    }
  }
}

} // namespace

extern "C" void dist_rt_maxpool2d_nhwc_f32(int64_t n, int64_t c, int64_t h,
                                           int64_t w, int64_t kh, int64_t kw,
                                           int64_t sh, int64_t sw, int64_t dh,
                                           int64_t dw, int64_t pt, int64_t pl,
                                           int64_t oh, int64_t ow,
                                           int64_t in_ptr, int64_t out_ptr) {
  if (n <= 0 || c <= 0 || oh <= 0 || ow <= 0)
    return;
  dist_rt::ProfileScope prof("maxpool channels-last");
  if (prof.active())
    prof.describe(double(n * oh * ow * c * kh * kw),
                  "n%lld, %lld channels, %lldx%lld -> %lldx%lld, kernel "
                  "%lldx%lld, strides %lldx%lld",
                  (long long)n, (long long)c, (long long)h, (long long)w,
                  (long long)oh, (long long)ow, (long long)kh, (long long)kw,
                  (long long)sh, (long long)sw);
  PoolJob job{n,
              c,
              h,
              w,
              kh,
              kw,
              sh,
              sw,
              dh,
              dw,
              pt,
              pl,
              oh,
              ow,
              reinterpret_cast<const float *>(in_ptr),
              reinterpret_cast<float *>(out_ptr),
              dist_rt::hostSimdLevel() >= dist_rt::SimdLevel::Avx512};
  dist_rt_parallel_for(n * oh, poolRows, &job);
}
