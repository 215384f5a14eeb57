//===- simd_activation.h - ReLU and Clip on 8 and 16 lanes ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The activations the runtime's AVX2 and AVX-512 kernels apply as they
// store (the convolution rows of conv.cpp, the packed products' tiles of
// sgemm_packed.cpp): max(v, 0) when `relu`, then v clamped to [lo, hi]
// when `clip`, with ordered compares, so NaN is kept and -0 becomes +0, as
// conv.cpp's scalar activate() and ONNX's Relu and Clip do.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_SIMD_ACTIVATION_H
#define DIST_RT_SIMD_ACTIVATION_H

namespace dist_rt {

/// The same on one value (the kernels' scalar edges and passes).
inline float reluClip1(float v, bool relu, bool clip, float lo, float hi) {
  if (relu)
    v = v <= 0.0f ? 0.0f : v;
  if (clip) {
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
  }
  return v;
}

} // namespace dist_rt

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace dist_rt {

__attribute__((target("avx2,fma"), always_inline)) inline __m256
reluClip8(__m256 r, bool relu, bool clip, float lo, float hi) {
  if (relu) {
    __m256 zero = _mm256_setzero_ps();
    r = _mm256_blendv_ps(r, zero, _mm256_cmp_ps(r, zero, _CMP_LE_OQ));
  }
  if (clip) {
    __m256 l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);
    r = _mm256_blendv_ps(r, l, _mm256_cmp_ps(r, l, _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, h, _mm256_cmp_ps(r, h, _CMP_GT_OQ));
  }
  return r;
}

/// reluClip8 on 16 lanes.
__attribute__((target("avx512f"), always_inline)) inline __m512
reluClip16(__m512 r, bool relu, bool clip, float lo, float hi) {
  if (relu) {
    __m512 zero = _mm512_setzero_ps();
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, zero, _CMP_LE_OQ), zero);
  }
  if (clip) {
    __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, l, _CMP_LT_OQ), l);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, h, _CMP_GT_OQ), h);
  }
  return r;
}

} // namespace dist_rt

#endif
#endif // DIST_RT_SIMD_ACTIVATION_H
