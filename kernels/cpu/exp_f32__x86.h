#pragma once
// exp(x) on f32 vectors for the x86 families (AVX-512 and AVX2), the same
// formula as exp_f32__portable.h and exp_f32__neon.h: Cody-Waite reduction
// x = n ln2 + r, |r| <= ln2 / 2, Cephes' degree-6 polynomial for e^r, then
// 2^n. Relative error about 1e-7 (a few ulp) for -87.3 <= x <= 88; below
// -87.33 (ln of the smallest normal f32), -inf included, the result is 0.
// For x <= 88 only (attention's arguments are <= 0). Unnamed namespace as
// simd_util__x86.h: each ISA file compiles it under its own flags.
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {
namespace {

namespace exp_f32 {
constexpr float kMin = -87.33654f;  // ln(FLT_MIN)
constexpr float kMax = 88.0f;       // n <= 127
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;      // 9 bits: n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;   // ln2 - kLn2Hi
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f, kP3 = 4.1665795894e-2f,
                kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
}  // namespace exp_f32

#if defined(__AVX512F__)
inline __m512 exp_f32x16(__m512 x) {
  using namespace exp_f32;
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kMin)), _mm512_set1_ps(kMax));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kMin), _CMP_GE_OQ);
  return _mm512_maskz_mov_ps(live, _mm512_scalef_ps(y, n));
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
inline __m256 exp_f32x8(__m256 x) {
  using namespace exp_f32;
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kMin)), _mm256_set1_ps(kMax));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  // 2^n from its exponent bits: -126 <= n <= 127 after the clamp.
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(kMin), _CMP_GE_OQ);
  return _mm256_and_ps(live, _mm256_mul_ps(y, _mm256_castsi256_ps(bits)));
}
#endif

}  // namespace
}  // namespace tessera::kernels::cpu::detail
