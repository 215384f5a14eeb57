//===- simd_activation.h - ReLU, Clip, SiLU, HardSwish on SIMD --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The activations the runtime's AVX2 and AVX-512 kernels apply as they
// store (the convolution rows of conv.cpp, the packed products' tiles of
// sgemm_packed.cpp): max(v, 0) when `relu`, then v clamped to [lo, hi]
// when `clip`, with ordered compares, so NaN is kept and -0 becomes +0, as
// conv.cpp's scalar activate() and ONNX's Relu and Clip do. Before them,
// when asked, SiLU: v * (1 / (1 + exp(-v))), as the generated code computes
// ONNX's Sigmoid and the Mul by its input (EfficientNet's activation),
// with exp as a polynomial (Cephes' expf: within 1 ulp of exp on [-87, 88]
// at steps of 7.3e-4 on both widths; NaN kept, exp of
// large arguments +inf, of very negative ones 0, as the generated code's);
// or HardSwish: v * max(0, min(1, v * (1/6) + 1/2)), as the generated code
// computes ONNX's HardSwish (and a HardSigmoid of alpha 1/6, beta 1/2 times
// its input: MobileNetV3's activation; -inf gives NaN there and here;
// the multiply and add may be fused here, within an ulp of the loop's).
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_SIMD_ACTIVATION_H
#define DIST_RT_SIMD_ACTIVATION_H

#include <cmath>

namespace dist_rt {

/// The gate an activation starts with, v * gate(v), if any: SiLU's
/// sigmoid or HardSwish's max(0, min(1, v / 6 + 1 / 2)).
enum class Gate : unsigned char { None, Silu, HardSwish };

/// The gate of a call's flags (SiLU's when both are set: codegen never
/// sets both).
inline Gate gateOf(bool silu, bool hardSwish) {
  return silu ? Gate::Silu : hardSwish ? Gate::HardSwish : Gate::None;
}

/// HardSwish's 1/6 (the f32 nearest, as the generated code's constant).
constexpr float kSixth = 1.0f / 6.0f;

/// SiLU on one value.
inline float silu1(float v) { return v * (1.0f / (1.0f + std::exp(-v))); }

/// HardSwish on one value.
inline float hardSwish1(float v) {
  float g = v * kSixth + 0.5f;
  g = g > 1.0f ? 1.0f : g;
  g = g < 0.0f ? 0.0f : g;
  return v * g;
}

/// The same on one value (the kernels' scalar edges and passes), the gate
/// first.
inline float reluClip1(float v, bool relu, bool clip, float lo, float hi,
                       Gate gate = Gate::None) {
  if (gate == Gate::Silu)
    v = silu1(v);
  else if (gate == Gate::HardSwish)
    v = hardSwish1(v);
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

/// Cephes' expf: exp(x) = 2^n * exp(r), n = round(x / ln 2), |r| <= ln 2 / 2,
/// exp(r) by a polynomial of degree 7 (6 coefficients, then 1 + r).
constexpr float kExpHi = 88.3762626647949f, kExpLo = -88.3762626647949f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f,
                            8.3334519073e-3f, 4.1665795894e-2f,
                            1.6666665459e-1f, 5.0000001201e-1f};

__attribute__((target("avx2,fma"), always_inline)) inline __m256
exp8(__m256 x) {
  __m256 hi = _mm256_set1_ps(kExpHi), lo = _mm256_set1_ps(kExpLo);
  // Past the bounds: +inf and 0 (NaN compares false and stays).
  __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  __m256 t = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  t = _mm256_blendv_ps(t, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(kLog2e)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), t);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 y = _mm256_set1_ps(kExpP[0]);
  for (int i = 1; i < 6; ++i)
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(kExpP[i]));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r),
                      _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n for n in [-127, 127] through the exponent field.
  __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), over);
  return _mm256_blendv_ps(y, _mm256_setzero_ps(), under);
}

/// SiLU on 8 lanes.
__attribute__((target("avx2,fma"), always_inline)) inline __m256
silu8(__m256 v) {
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
  return _mm256_mul_ps(v, _mm256_div_ps(one, _mm256_add_ps(one, e)));
}

/// exp8 on 16 lanes; scalef gives 2^n, +inf and 0 past the range.
__attribute__((target("avx512f"), always_inline)) inline __m512
exp16(__m512 x) {
  __m512 hi = _mm512_set1_ps(kExpHi), lo = _mm512_set1_ps(kExpLo);
  __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  __m512 t = _mm512_mask_mov_ps(x, over, hi);
  t = _mm512_mask_mov_ps(t, under, lo);
  __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(kLog2e)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 y = _mm512_set1_ps(kExpP[0]);
  for (int i = 1; i < 6; ++i)
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(kExpP[i]));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r),
                      _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  y = _mm512_scalef_ps(y, n);
  y = _mm512_mask_mov_ps(y, over, _mm512_set1_ps(INFINITY));
  return _mm512_mask_mov_ps(y, under, _mm512_setzero_ps());
}

/// SiLU on 16 lanes.
__attribute__((target("avx512f"), always_inline)) inline __m512
silu16(__m512 v) {
  __m512 one = _mm512_set1_ps(1.0f);
  __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), v));
  return _mm512_mul_ps(v, _mm512_div_ps(one, _mm512_add_ps(one, e)));
}

/// HardSwish on 8 lanes (min and max return the bound for NaN, whose
/// product with v stays NaN).
__attribute__((target("avx2,fma"), always_inline)) inline __m256
hardSwish8(__m256 v) {
  __m256 g = _mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(kSixth)),
                           _mm256_set1_ps(0.5f));
  g = _mm256_max_ps(_mm256_min_ps(g, _mm256_set1_ps(1.0f)),
                    _mm256_setzero_ps());
  return _mm256_mul_ps(v, g);
}

/// HardSwish on 16 lanes.
__attribute__((target("avx512f"), always_inline)) inline __m512
hardSwish16(__m512 v) {
  __m512 g = _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(kSixth)),
                           _mm512_set1_ps(0.5f));
  g = _mm512_max_ps(_mm512_min_ps(g, _mm512_set1_ps(1.0f)),
                    _mm512_setzero_ps());
  return _mm512_mul_ps(v, g);
}

/// reluClip1 on 8 lanes.
__attribute__((target("avx2,fma"), always_inline)) inline __m256
reluClip8(__m256 r, bool relu, bool clip, float lo, float hi,
          Gate gate = Gate::None) {
  if (gate == Gate::Silu)
    r = silu8(r);
  else if (gate == Gate::HardSwish)
    r = hardSwish8(r);
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

/// reluClip1 on 16 lanes.
__attribute__((target("avx512f"), always_inline)) inline __m512
reluClip16(__m512 r, bool relu, bool clip, float lo, float hi,
           Gate gate = Gate::None) {
  if (gate == Gate::Silu)
    r = silu16(r);
  else if (gate == Gate::HardSwish)
    r = hardSwish16(r);
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
