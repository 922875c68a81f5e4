#pragma once
// A 16 x 16 dword transpose in AVX-512 registers, for the panel kernels
// (*_panel_gemm__avx512vnni.cpp) that turn 16 weight rows into vectors whose
// lane r is row r. Include after simd_util__x86.h, from an AVX-512 file only
// (unnamed namespace: each includer compiles its own copy under its flags).
#include <immintrin.h>

namespace tessera::kernels::cpu::detail {
namespace {

// in[r] (row r, 16 dwords) to out[j] (lane r = in[r]'s dword j).
inline void transpose_16x16(const __m512i (&in)[16], __m512i (&out)[16]) {
  __m512i t[16], u[16];
  for (int p = 0; p < 8; ++p) {
    t[2 * p] = _mm512_unpacklo_epi32(in[2 * p], in[2 * p + 1]);      // per 128 bits: a0 b0 a1 b1
    t[2 * p + 1] = _mm512_unpackhi_epi32(in[2 * p], in[2 * p + 1]);  // a2 b2 a3 b3
  }
  for (int q = 0; q < 4; ++q) {  // u[4q + c], 128-bit lane L: rows 4q..4q+3, dword 4L + c
    u[4 * q + 0] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
    u[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
    u[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
  }
  for (int c = 0; c < 4; ++c) {  // out[4L + c] = lane L of u[c], u[4 + c], u[8 + c], u[12 + c]
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44), v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    out[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    out[4 + c] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
    out[8 + c] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    out[12 + c] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
