#pragma once
// Private to kernels/cpu's avx512_vnni q4_K, q5_K and q6_K kernels: what
// the tiles (k_quant_gemm__avx512vnni.cpp) and the panels
// (k_quant_panel_gemm__avx512vnni.cpp) share, above all the float steps
// every output takes per weight super-block, written once so that both
// give the same bits. A super-block
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

// q4_K/q5_K's 12 packed bytes as 8 six-bit scales (bytes 0-7) and 8 mins
// (8-15), k4_scales_mins in vector registers, for a row's k4_head in each
// 128-bit lane of q (the packed bytes at 4-15): j < 4 is the low 6 bits of
// bytes j and j + 4; j >= 4 is a nibble of byte j + 4 with the top 2 bits
// of byte j - 4 (scales) or j (mins) above it.
inline __m512i k4_scales_mins_lanes(__m512i q) {
  auto each = [](__m128i v) { return _mm512_broadcast_i32x4(v); };
  const __m512i a = _mm512_shuffle_epi8(q, each(_mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15)));
  const __m512i top = _mm512_shuffle_epi8(q, each(_mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11)));
  const __m512i low = _mm512_and_si512(a, each(_mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)));
  const __m512i high_nibbles =
      _mm512_and_si512(_mm512_srli_epi16(a, 4), each(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
  return _mm512_or_si512(_mm512_or_si512(low, high_nibbles),
                         _mm512_and_si512(_mm512_srli_epi16(top, 2), _mm512_set1_epi8(0x30)));
}

inline float q6_accumulate(float acc, float s, float d_xd) { return std::fma(s, d_xd, acc); }
inline __m128 q6_accumulate(__m128 acc, __m128 s, __m128 d_xd) { return _mm_fmadd_ps(s, d_xd, acc); }
inline __m512 q6_accumulate(__m512 acc, __m512 s, __m512 d_xd) { return _mm512_fmadd_ps(s, d_xd, acc); }

}  // namespace
}  // namespace tessera::kernels::cpu::detail
