#pragma once
// Private to kernels/cpu's avx512_vnni q4_K, q5_K and q6_K kernels: the
// float steps every output takes per weight super-block, written once so
// that the tiles (k_quant_gemm__avx512vnni.cpp) and the panels
// (k_quant_panel_gemm__avx512vnni.cpp) give the same bits. A super-block
// enters as exact integer sums (i32: s = sum over sub-blocks of the dot
// times the sub-block scale, m = sum of mins times x's sums; q6_K's s
// includes its -32), converted to f32 (round to nearest), and then
//   q4_K, q5_K: acc = fma(s, d * x.d, acc); acc = fma(-m, dmin * x.d, acc)
//   q6_K:       acc = fma(s, d * x.d, acc)
// over the super-blocks in order from acc = 0. Lanes of a vector are
// outputs of their own: each lane does the scalar steps exactly.
// (Included under the avx512_vnni files' target flags; internal linkage.)
#include <cmath>

#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {
namespace {

// [total of a's lanes, of b's, of c's, of d's] (exact: integers).
inline __m128i lane_sums4(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));  // per 128 bits: a b c d
  const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

inline float k4_accumulate(float acc, float s, float m, float d_xd, float dmin_xd) {
  return std::fma(-m, dmin_xd, std::fma(s, d_xd, acc));
}
inline __m128 k4_accumulate(__m128 acc, __m128 s, __m128 m, __m128 d_xd, __m128 dmin_xd) {
  return _mm_fnmadd_ps(m, dmin_xd, _mm_fmadd_ps(s, d_xd, acc));
}
inline __m512 k4_accumulate(__m512 acc, __m512 s, __m512 m, __m512 d_xd, __m512 dmin_xd) {
  return _mm512_fnmadd_ps(m, dmin_xd, _mm512_fmadd_ps(s, d_xd, acc));
}

inline float q6_accumulate(float acc, float s, float d_xd) { return std::fma(s, d_xd, acc); }
inline __m128 q6_accumulate(__m128 acc, __m128 s, __m128 d_xd) { return _mm_fmadd_ps(s, d_xd, acc); }
inline __m512 q6_accumulate(__m512 acc, __m512 s, __m512 d_xd) { return _mm512_fmadd_ps(s, d_xd, acc); }

}  // namespace
}  // namespace tessera::kernels::cpu::detail
