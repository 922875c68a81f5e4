#pragma once
// One element of a KV pool (kernel_args.h: f32, f16, bf16, q8_0 or
// fp8_e4m3), read as f32, and the rows appended to one. The plain path every
// kernel's vector code must agree with.
//
// f16 and bf16 are stored rounded to nearest even (core/half.h, bit-exact
// with F16C). q8_0 and fp8_e4m3 pools hold blocks of 32 elements of one
// head's row (BlockQ8_0, BlockFp8E4M3: an f16 scale and 32 bytes), so an
// element index i is byte (i / 32) * 34 + 2 + i % 32 of the pool; a row is
// quantized as a whole (its blocks' scales come from their amax). Every
// block element reads back as d * q exactly in f32 (an 11-bit scale times an
// 8-bit or 4-bit significand), so a kernel may widen in any order.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "core/half.h"
#include "core/quant.h"

namespace tessera::kernels {

// The 8-bit types: 32-element blocks, a pool row a whole number of them.
inline bool is_kv_block_type(DType t) { return t == DType::q8_0 || t == DType::fp8_e4m3; }
inline constexpr int kKvBlock = 32;

// OCP FP8 E4M3 (bias 7, no infinities, 0x7F / 0xFF NaN, 448 the largest).
inline float fp8_e4m3_to_f32(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  const float mag = e == 0 ? std::ldexp((float)m, -9) : std::ldexp((float)(8 + m), e - 10);
  return (b & 0x80) ? -mag : mag;
}

// Rounded to nearest even; beyond 448 saturates to 448 (no infinities), NaN stays NaN.
inline uint8_t f32_to_fp8_e4m3(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a >= 448.0f) return sign | 0x7E;
  // Subnormals m * 2^-9 (a * 512 is exact; m = 8 is the smallest normal, code 0x08).
  if (a < 0x1p-6f) return sign | (uint8_t)std::nearbyint(a * 512.0f);
  const uint32_t u = f32_to_bits(a);
  const uint32_t r = u + 0x7FFFFu + ((u >> 20) & 1u);  // to 3 mantissa bits, ties to even; a carry bumps the exponent
  const int e = (int)(r >> 23) - 127 + 7;
  const int m = (int)(r >> 20) & 7;
  if (e > 15 || (e == 15 && m == 7)) return sign | 0x7E;
  return sign | (uint8_t)(e << 3) | (uint8_t)m;
}

// 32 values as one block: d = amax / 448 stored as f16, each value divided by
// the stored d (so that d * q reconstructs with the scale actually kept).
inline void quantize_block_fp8_e4m3(const float* x, BlockFp8E4M3* y) {
  float amax = 0.0f;
  for (int j = 0; j < kKvBlock; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  y->d = f32_to_f16(amax / 448.0f);
  const float d = f16_to_f32(y->d);
  for (int j = 0; j < kKvBlock; ++j) y->qs[j] = d > 0.0f ? f32_to_fp8_e4m3(x[j] / d) : 0;
}

inline float load_kv(const void* pool, DType t, int64_t i) {
  switch (t) {
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(pool)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(pool)[i]);
    case DType::q8_0: {
      const BlockQ8_0& b = static_cast<const BlockQ8_0*>(pool)[i / kKvBlock];
      return f16_to_f32(b.d) * (float)b.qs[i % kKvBlock];
    }
    case DType::fp8_e4m3: {
      const BlockFp8E4M3& b = static_cast<const BlockFp8E4M3*>(pool)[i / kKvBlock];
      return f16_to_f32(b.d) * fp8_e4m3_to_f32(b.qs[i % kKvBlock]);
    }
    default: return static_cast<const float*>(pool)[i];
  }
}

// One element of an f32, f16 or bf16 pool (a block type stores whole rows: store_kv_row).
inline void store_kv(void* pool, DType t, int64_t i, float x) {
  switch (t) {
    case DType::f16: static_cast<uint16_t*>(pool)[i] = f32_to_f16(x); break;
    case DType::bf16: static_cast<uint16_t*>(pool)[i] = f32_to_bf16(x); break;
    default: static_cast<float*>(pool)[i] = x; break;
  }
}

// Stores x[0, n) at pool elements [first, first + n); for the block types
// first and n are multiples of 32 (a head's row is whole blocks). q8_0 is
// ggml's quantize_row_q8_0 (byte-compatible blocks).
inline void store_kv_row(void* pool, DType t, int64_t first, const float* x, int64_t n) {
  switch (t) {
    case DType::q8_0: quantize_row_q8_0(x, static_cast<BlockQ8_0*>(pool) + first / kKvBlock, n); return;
    case DType::fp8_e4m3:
      for (int64_t b = 0; b < n / kKvBlock; ++b)
        quantize_block_fp8_e4m3(x + b * kKvBlock, static_cast<BlockFp8E4M3*>(pool) + first / kKvBlock + b);
      return;
    default:
      for (int64_t e = 0; e < n; ++e) store_kv(pool, t, first + e, x[e]);
      return;
  }
}

// x rounded to an f16 or bf16 pool and back: what attention reads of an
// appended x (the block types round a row, not an element: load_kv after store_kv_row).
inline float round_to_kv(DType t, float x) {
  switch (t) {
    case DType::f16: return f16_to_f32(f32_to_f16(x));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(x));
    default: return x;
  }
}

}  // namespace tessera::kernels
