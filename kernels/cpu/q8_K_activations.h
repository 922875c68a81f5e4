#pragma once
// Private to kernels/cpu: x rows quantized for the K-quant integer tiles
// (q2_K, q3_K, q4_K, q5_K, q6_K) and the iq4_xs tiles, as llama.cpp's block_q8_K. One block per 256 elements
// of a row; row r of the workspace starts at base + r * q8_K_row_bytes(k).
// The bsums make the weights' per-sub-block offsets cheap: q4_K/q5_K's
// "- min" term is sum_s min_s * (bsums[2s] + bsums[2s+1]) (q2_K's the same
// per 16), and q6_K's "- 32" is -32 * sum_s scale_s * bsums[s] (q3_K's "- 4"
// likewise), so the tiles dot unsigned
// weight codes with signed x and correct once per super-block.
// The avx512_vnni family stores q4_K and q5_K x rows with each 128 elements'
// middle 64 swapped (k_quant_gemm__avx512vnni.cpp says why); qs is then in
// that order, bsums in element order. A row is read only by the tiles of the
// family whose quantize_row_K (isa_kernels.h) wrote it.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace tessera::kernels::cpu::detail {

struct BlockQ8_K {
  float d;                      // max|x| / 127 over the 256 elements (kept in f32)
  int8_t qs[kQK_K];             // q = round(x / d), |q| <= 127
  int16_t bsums[kQK_K / 16];    // sum of q over each 16 elements
};
static_assert(sizeof(BlockQ8_K) == 292);

inline int64_t q8_K_row_bytes(int64_t k) {
  return ((k / kQK_K) * (int64_t)sizeof(BlockQ8_K) + 63) / 64 * 64;
}

// Quantizes one x row of k floats (k a multiple of 256), in element order
// whatever the weight type: the portable and avx2 families' quantize_row_K
// (a QuantizeRowFn, isa_kernels.h). Plain C++; the avx512_vnni family has
// its own, bit for bit the same before its reordering.
void quantize_row_q8_K(DType w_dtype, const float* x, int64_t k, std::byte* row);

namespace {
// q4_K/q5_K's 12 packed bytes as 8 six-bit scales (bytes 0-7 of u, little
// endian) and 8 mins (bytes 8-15): ggml's get_scale_min_k4 for all
// sub-blocks at once. In four words, not bytes: the SIMD tiles move them to
// a vector register directly (a 16-byte reload of four 4-byte stores would
// miss store forwarding and stall every super-block).
inline void k4_scales_mins(const uint8_t* packed, uint32_t u[4]) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kTop2 = 0x03030303;
  uint32_t p[3];
  std::memcpy(p, packed, 12);
  u[0] = p[0] & kLow6;
  u[1] = (p[2] & kLow4) | (((p[0] >> 6) & kTop2) << 4);
  u[2] = p[1] & kLow6;
  u[3] = ((p[2] >> 4) & kLow4) | (((p[1] >> 6) & kTop2) << 4);
}
// q3_K's 12 packed bytes as 16 six-bit scales + 32 (0..63), byte j of u is
// sub-block j's: core/quant's q3_K_scales in four words, for the same reason.
inline void q3_K_scale_words(const uint8_t* packed, uint32_t u[4]) {
  constexpr uint32_t kTop2 = 0x03030303, kLow4 = 0x0f0f0f0f;
  uint32_t p[3];
  std::memcpy(p, packed, 12);
  u[0] = (p[0] & kLow4) | (((p[2] >> 0) & kTop2) << 4);
  u[1] = (p[1] & kLow4) | (((p[2] >> 2) & kTop2) << 4);
  u[2] = ((p[0] >> 4) & kLow4) | (((p[2] >> 4) & kTop2) << 4);
  u[3] = ((p[1] >> 4) & kLow4) | (((p[2] >> 6) & kTop2) << 4);
}
// Byte j of those words: scale j (j < 8) or min j - 8.
inline uint8_t k4_byte(const uint32_t u[4], int j) { return (uint8_t)(u[j / 4] >> (8 * (j % 4))); }
}  // namespace

}  // namespace tessera::kernels::cpu::detail
