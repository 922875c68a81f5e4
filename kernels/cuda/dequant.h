#pragma once
// Weights to f32 on the device: one 32-element unit of a GGUF block row at a
// time (decode_unit), or one element of a plain row (plain_at). A unit is a
// whole block of the 32-element types (q8_0, q4_0, q4_1, q5_0, q5_1,
// iq4_nl) and one eighth of a 256-element super-block (q2_K, q3_K, q4_K,
// q5_K, q6_K, iq4_xs): the largest piece every type decodes from one scale
// header without touching a neighbour's codes, so a thread reads a unit's
// bytes once (kernels/cuda/weight_loads.h) and keeps the 32 values in
// registers.
//
// The arithmetic is core/quant.cpp's dequantize_row_*, operation for
// operation, so each value is the reference's bit for bit: where it rounds a
// product before adding a min, __fmul_rn (and TS_NO_FP_CONTRACT on HIP)
// keeps the compiler from fusing the two into one FMA, which rounds once.
// Layouts: core/dtype.h; kernels/vulkan/weight_units.glsl reads the same.
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/weight_loads.h"

// The functions that round a product before adding a min open with this:
// nvcc never fuses __fmul_rn into an FMA, but HIP's clang defines it as a
// plain product, which its default -ffp-contract=fast-honor-pragmas fuses.
#if defined(TESSERA_GPU_HIP)
#define TS_NO_FP_CONTRACT _Pragma("clang fp contract(off)")
#else
#define TS_NO_FP_CONTRACT
#endif

namespace tessera::gpu::kernels {

inline constexpr int kUnit = 32;  // elements a decode_unit call yields

// The types decode_unit reads (k a multiple of 32 for all of them).
__host__ __device__ constexpr bool is_block_type(DType t) {
  switch (t) {
    case DType::q8_0: case DType::q4_0: case DType::q4_1: case DType::q5_0: case DType::q5_1: case DType::iq4_nl:
    case DType::q2_K: case DType::q3_K: case DType::q4_K: case DType::q5_K: case DType::q6_K: case DType::iq4_xs:
      return true;
    default:
      return false;
  }
}

// The types plain_at reads.
__host__ __device__ constexpr bool is_plain_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// Element e of a plain row.
__device__ __forceinline__ float plain_at(DType t, const uint8_t* row, int64_t e) {
  if (t == DType::f32) return reinterpret_cast<const float*>(row)[e];
  const uint16_t h = reinterpret_cast<const uint16_t*>(row)[e];
  return t == DType::f16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
}

namespace dequant {

// kIq4nlValues[i] (core/dtype.h) as bytes of four words picked by selects:
// an indexed local array would live in local memory.
__device__ __forceinline__ float iq4_value(uint32_t i) {
  const uint32_t w = i < 8u ? (i < 4u ? 0xBFAD9881u : 0xF6EADDCFu) : (i < 12u ? 0x26190D01u : 0x71594535u);
  return (float)(int8_t)(uint8_t)(w >> (8u * (i & 3u)));
}

// Byte i (0..11) of the 12 scale bytes of q3_K, q4_K, q5_K; i known only at run time.
__device__ __forceinline__ uint32_t scale_byte(const uint32_t (&s)[3], int i) {
  const uint32_t word = i < 4 ? s[0] : i < 8 ? s[1] : s[2];
  return (word >> (8 * (i & 3))) & 0xffu;
}

// q4_K / q5_K: the 6-bit scale and min of sub-block j (core/quant.cpp q4_K_scale_min).
__device__ __forceinline__ void k4_scale_min(const uint32_t (&s)[3], int j, uint32_t& sc, uint32_t& mn) {
  if (j < 4) {
    sc = scale_byte(s, j) & 63u;
    mn = scale_byte(s, j + 4) & 63u;
  } else {
    sc = (scale_byte(s, j + 4) & 0x0fu) | ((scale_byte(s, j - 4) >> 6) << 4);
    mn = (scale_byte(s, j + 4) >> 4) | ((scale_byte(s, j) >> 6) << 4);
  }
}

// q3_K: scale i (of 16), minus 32 (core/quant.cpp q3_K_scales): its low 4
// bits are nibble i / 8 of byte i % 8, its high 2 bits are bits 2(i / 4) of byte 8 + i % 4.
__device__ __forceinline__ int q3k_scale(const uint32_t (&s)[3], int i) {
  const int b = i & 3, g = i >> 2;
  const uint32_t low = (((g & 1) ? s[1] : s[0]) >> (8 * b + 4 * (g >> 1))) & 15u;
  const uint32_t high = (s[2] >> (8 * b + 2 * g)) & 3u;
  return (int)(low | (high << 4)) - 32;
}

// The 32-element types: `blk` is the block.

__device__ __forceinline__ void q8_0(const uint8_t* blk, float (&v)[kUnit]) {
  const float d = f16_at(blk);
  uint32_t q[8];
  load_words<32>(blk + 2, q);
#pragma unroll
  for (int j = 0; j < 32; ++j) v[j] = (float)(int8_t)byte_of(q, j) * d;
}

// q4_0, q4_1, iq4_nl, q5_*: element j (< 16) in the low nibble of qs[j], j + 16 in its high nibble.
__device__ __forceinline__ void q4_0(const uint8_t* blk, float (&v)[kUnit]) {
  const float d = f16_at(blk);
  uint32_t q[4];
  load_words<16>(blk + 2, q);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const uint32_t b = byte_of(q, j);
    v[j] = (float)((int)(b & 15u) - 8) * d;
    v[j + 16] = (float)((int)(b >> 4) - 8) * d;
  }
}

__device__ __forceinline__ void q4_1(const uint8_t* blk, float (&v)[kUnit]) {
  TS_NO_FP_CONTRACT
  const float d = f16_at(blk), m = f16_at(blk + 2);
  uint32_t q[4];
  load_words<16>(blk + 4, q);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const uint32_t b = byte_of(q, j);
    v[j] = __fmul_rn((float)(b & 15u), d) + m;
    v[j + 16] = __fmul_rn((float)(b >> 4), d) + m;
  }
}

// q5_0, q5_1: bit j of the little-endian 32-bit qh is element j's fifth bit.
__device__ __forceinline__ void q5_0(const uint8_t* blk, float (&v)[kUnit]) {
  const float d = f16_at(blk);
  uint32_t qh[1], q[4];
  load_words<4>(blk + 2, qh);
  load_words<16>(blk + 6, q);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const uint32_t b = byte_of(q, j);
    const int x0 = (int)((b & 15u) | (((qh[0] >> j) << 4) & 0x10u)) - 16;
    const int x1 = (int)((b >> 4) | ((qh[0] >> (j + 12)) & 0x10u)) - 16;
    v[j] = (float)x0 * d;
    v[j + 16] = (float)x1 * d;
  }
}

__device__ __forceinline__ void q5_1(const uint8_t* blk, float (&v)[kUnit]) {
  TS_NO_FP_CONTRACT
  const float d = f16_at(blk), m = f16_at(blk + 2);
  uint32_t qh[1], q[4];
  load_words<4>(blk + 4, qh);
  load_words<16>(blk + 8, q);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const uint32_t b = byte_of(q, j);
    const uint32_t x0 = (b & 15u) | (((qh[0] >> j) << 4) & 0x10u);
    const uint32_t x1 = (b >> 4) | ((qh[0] >> (j + 12)) & 0x10u);
    v[j] = __fmul_rn((float)x0, d) + m;
    v[j + 16] = __fmul_rn((float)x1, d) + m;
  }
}

__device__ __forceinline__ void iq4_nl(const uint8_t* blk, float (&v)[kUnit]) {
  const float d = f16_at(blk);
  uint32_t q[4];
  load_words<16>(blk + 2, q);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const uint32_t b = byte_of(q, j);
    v[j] = d * iq4_value(b & 15u);
    v[j + 16] = d * iq4_value(b >> 4);
  }
}

// The super-block types: `blk` is the super-block, j (0..7) the unit in it,
// elements 32j .. 32j + 31 of the super-block.

// q2_K: each 32 bytes of qs hold four units (128 elements), unit j in bits
// 2(j % 4) of bytes 32(j / 4) ..; scales[2j] covers its first 16 elements,
// scales[2j + 1] the last 16 (scale in the low nibble, min in the high).
__device__ __forceinline__ void q2_K(const uint8_t* blk, int j, float (&v)[kUnit]) {
  TS_NO_FP_CONTRACT
  const float d = f16_at(blk + 80), dmin = f16_at(blk + 82);
  const uint32_t sc = load_u16(blk + 2 * j);
  const float dl0 = d * (float)(sc & 15u), ml0 = dmin * (float)((sc >> 4) & 15u);
  const float dl1 = d * (float)((sc >> 8) & 15u), ml1 = dmin * (float)(sc >> 12);
  uint32_t q[8];
  load_words<32>(blk + 16 + 32 * (j >> 2), q);
  const int shift = 2 * (j & 3);
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const float code = (float)((byte_of(q, i) >> shift) & 3u);
    v[i] = i < 16 ? __fmul_rn(dl0, code) - ml0 : __fmul_rn(dl1, code) - ml1;
  }
}

// q3_K: the low 2 bits as q2_K's (qs at byte 32), the third bit is bit j of
// hmask[i] (the same 32 bytes for every unit; clear means -4), scales 2j and
// 2j + 1 as q2_K's halves.
__device__ __forceinline__ void q3_K(const uint8_t* blk, int j, float (&v)[kUnit]) {
  const float d = f16_at(blk + 108);
  uint32_t s[3];
  load_words<12>(blk + 96, s);
  const float dl0 = d * (float)q3k_scale(s, 2 * j), dl1 = d * (float)q3k_scale(s, 2 * j + 1);
  uint32_t q[8], h[8];
  load_words<32>(blk + 32 + 32 * (j >> 2), q);
  load_words<32>(blk, h);
  const int shift = 2 * (j & 3);
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int low = (int)((byte_of(q, i) >> shift) & 3u);
    const int code = low - (((byte_of(h, i) >> j) & 1u) ? 0 : 4);
    v[i] = (i < 16 ? dl0 : dl1) * (float)code;
  }
}

// q4_K's and q5_K's unit j: d · scale and dmin · min from the block's
// header (d, dmin, then 12 bytes of 6-bit scales and mins).
__device__ __forceinline__ void k4_unit_scale(const uint8_t* blk, int j, float& d1, float& m1) {
  TS_NO_FP_CONTRACT  // m1 is subtracted from a rounded product in the caller: never fused into it
  const float d = f16_at(blk), dmin = f16_at(blk + 2);
  uint32_t s[3];
  load_words<12>(blk + 4, s);
  uint32_t sc, mn;
  k4_scale_min(s, j, sc, mn);
  d1 = d * (float)sc;
  m1 = dmin * (float)mn;
}

// q4_K: units 2c and 2c + 1 share the 32 bytes of qs at 32c, the even one in
// the low nibbles; one 6-bit scale and min per unit.
__device__ __forceinline__ void q4_K(const uint8_t* blk, int j, float (&v)[kUnit]) {
  TS_NO_FP_CONTRACT
  float d1, m1;
  k4_unit_scale(blk, j, d1, m1);
  uint32_t q[8];
  load_words<32>(blk + 16 + 32 * (j >> 1), q);
  const int shift = 4 * (j & 1);
#pragma unroll
  for (int i = 0; i < 32; ++i) v[i] = __fmul_rn(d1, (float)((byte_of(q, i) >> shift) & 15u)) - m1;
}

// q5_K: q4_K's nibbles (qs at byte 48) plus a fifth bit, bit j of qh[i] (qh at byte 16).
__device__ __forceinline__ void q5_K(const uint8_t* blk, int j, float (&v)[kUnit]) {
  TS_NO_FP_CONTRACT
  float d1, m1;
  k4_unit_scale(blk, j, d1, m1);
  uint32_t q[8], h[8];
  load_words<32>(blk + 48 + 32 * (j >> 1), q);
  load_words<32>(blk + 16, h);
  const int shift = 4 * (j & 1);
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const uint32_t code = ((byte_of(q, i) >> shift) & 15u) + (((byte_of(h, i) >> j) & 1u) ? 16u : 0u);
    v[i] = __fmul_rn(d1, (float)code) - m1;
  }
}

// q6_K: each 128-element half h = j / 4 has 64 bytes of ql (at 64h) and 32 of
// qh (at 128 + 32h); its unit g = j % 4 takes ql bytes 32(g % 2) .., nibble
// g / 2, and bits 2g, 2g + 1 of qh; int8 scales[2j], [2j + 1] cover its halves.
__device__ __forceinline__ void q6_K(const uint8_t* blk, int j, float (&v)[kUnit]) {
  const float d = f16_at(blk + 208);
  const uint32_t sc = load_u16(blk + 192 + 2 * j);
  // (d * scale) * q, in that order, as the reference.
  const float ds0 = d * (float)(int8_t)(uint8_t)(sc & 0xffu), ds1 = d * (float)(int8_t)(uint8_t)(sc >> 8);
  const int h = j >> 2, g = j & 3;
  uint32_t ql[8], qh[8];
  load_words<32>(blk + 64 * h + 32 * (g & 1), ql);
  load_words<32>(blk + 128 + 32 * h, qh);
  const int lo_shift = 4 * (g >> 1), hi_shift = 2 * g;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int code = (int)(((byte_of(ql, i) >> lo_shift) & 15u) | (((byte_of(qh, i) >> hi_shift) & 3u) << 4)) - 32;
    v[i] = (i < 16 ? ds0 : ds1) * (float)code;
  }
}

// iq4_xs: unit j's 6-bit scale has its low 4 bits in nibble j % 2 of
// scales_l[j / 2] (byte 4), its high 2 in bits 2j of scales_h (byte 2); its
// 16 bytes of codes at 8 + 16j are ordered as iq4_nl's.
__device__ __forceinline__ void iq4_xs(const uint8_t* blk, int j, float (&v)[kUnit]) {
  const float d = f16_at(blk);
  const uint32_t sh = load_u16(blk + 2);
  const uint32_t sl = blk[4 + (j >> 1)];
  const int ls = (int)(((sl >> (4 * (j & 1))) & 15u) | (((sh >> (2 * j)) & 3u) << 4));
  const float dl = d * (float)(ls - 32);
  uint32_t q[4];
  load_words<16>(blk + 8 + 16 * j, q);
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const uint32_t b = byte_of(q, i);
    v[i] = dl * iq4_value(b & 15u);
    v[i + 16] = dl * iq4_value(b >> 4);
  }
}

}  // namespace dequant

// Elements 32u .. 32u + 31 of the row of block type t that starts at `row`
// (rows are whole blocks; every block type is_block_type says yes to).
__device__ __forceinline__ void decode_unit(DType t, const uint8_t* row, int64_t u, float (&v)[kUnit]) {
  const int j = (int)(u & 7);  // the unit within a 256-element super-block
  const int64_t sb = u >> 3;
  switch (t) {
    case DType::q8_0: dequant::q8_0(row + u * (int64_t)sizeof(BlockQ8_0), v); return;
    case DType::q4_0: dequant::q4_0(row + u * (int64_t)sizeof(BlockQ4_0), v); return;
    case DType::q4_1: dequant::q4_1(row + u * (int64_t)sizeof(BlockQ4_1), v); return;
    case DType::q5_0: dequant::q5_0(row + u * (int64_t)sizeof(BlockQ5_0), v); return;
    case DType::q5_1: dequant::q5_1(row + u * (int64_t)sizeof(BlockQ5_1), v); return;
    case DType::iq4_nl: dequant::iq4_nl(row + u * (int64_t)sizeof(BlockIq4_NL), v); return;
    case DType::q2_K: dequant::q2_K(row + sb * (int64_t)sizeof(BlockQ2_K), j, v); return;
    case DType::q3_K: dequant::q3_K(row + sb * (int64_t)sizeof(BlockQ3_K), j, v); return;
    case DType::q4_K: dequant::q4_K(row + sb * (int64_t)sizeof(BlockQ4_K), j, v); return;
    case DType::q5_K: dequant::q5_K(row + sb * (int64_t)sizeof(BlockQ5_K), j, v); return;
    case DType::q6_K: dequant::q6_K(row + sb * (int64_t)sizeof(BlockQ6_K), j, v); return;
    case DType::iq4_xs: dequant::iq4_xs(row + sb * (int64_t)sizeof(BlockIq4_XS), j, v); return;
    default:
#pragma unroll
      for (int i = 0; i < kUnit; ++i) v[i] = 0.0f;
      return;
  }
}

}  // namespace tessera::gpu::kernels
