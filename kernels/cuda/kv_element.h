#pragma once
// One element of a KV pool on the device (kernels/kernel_args.h: f32, f16,
// bf16, q8_0 or fp8_e4m3), read as f32; f16 and bf16 stored rounded to
// nearest even, the 8-bit types a 32-element block at a time, as the
// reference's kernels/kv_element.h: element i of a block type is byte
// (i / 32) * 34 + 2 + i % 32 of the pool, after its block's f16 scale. The
// type is uniform over a launch, so the branch is.
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/gpu_device.h"

namespace tessera::gpu::kernels {

constexpr int kKvBlock = 32, kKvBlockBytes = 34;

__host__ __device__ inline bool is_kv_block_type(DType t) { return t == DType::q8_0 || t == DType::fp8_e4m3; }

// OCP FP8 E4M3 (bias 7, no infinities, 0x7F / 0xFF NaN), as kernels/kv_element.h.
__host__ __device__ inline float fp8_e4m3_bits_to_f32(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return f32_from_bits(0x7fc00000u);
  const float mag = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
  return (b & 0x80) ? -mag : mag;
}

// Rounded to nearest even; beyond 448 saturates to 448, NaN stays NaN (the reference's f32_to_fp8_e4m3).
__host__ __device__ inline uint8_t f32_to_fp8_e4m3_bits(float x) {
  if (x != x) return 0x7F;  // NaN
  const uint8_t sign = (f32_bits(x) >> 31) ? 0x80 : 0;
  const float a = fabsf(x);
  if (a >= 448.0f) return sign | 0x7E;
  if (a < 0x1p-6f) return sign | (uint8_t)rintf(a * 512.0f);  // subnormals m * 2^-9
  const uint32_t u = f32_bits(a);
  const uint32_t r = u + 0x7FFFFu + ((u >> 20) & 1u);
  const int e = (int)(r >> 23) - 127 + 7;
  const int m = (int)(r >> 20) & 7;
  if (e > 15 || (e == 15 && m == 7)) return sign | 0x7E;
  return sign | (uint8_t)(e << 3) | (uint8_t)m;
}

__host__ __device__ inline float load_kv(const void* pool, DType t, int64_t i) {
  if (t == DType::f16) return f16_bits_to_f32(static_cast<const uint16_t*>(pool)[i]);
  if (t == DType::bf16) return bf16_bits_to_f32(static_cast<const uint16_t*>(pool)[i]);
  if (is_kv_block_type(t)) {
    const uint8_t* block = static_cast<const uint8_t*>(pool) + (i / kKvBlock) * kKvBlockBytes;
    const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block));
    const uint8_t q = block[2 + i % kKvBlock];
    return t == DType::q8_0 ? d * (float)(int8_t)q : d * fp8_e4m3_bits_to_f32(q);
  }
  return static_cast<const float*>(pool)[i];
}

// The 32 elements x[0, 32) as the block at pool element `first` (a multiple
// of 32) of a q8_0 pool (ggml's quantize_row_q8_0: d = amax / 127) or an
// fp8_e4m3 one (d = amax / 448, each value divided by the d kept).
__host__ __device__ inline void store_kv_block(void* pool, DType t, int64_t first, const float* x) {
  uint8_t* block = static_cast<uint8_t*>(pool) + (first / kKvBlock) * kKvBlockBytes;
  float amax = 0.0f;
  for (int j = 0; j < kKvBlock; ++j) amax = fmaxf(amax, fabsf(x[j]));
  if (t == DType::q8_0) {
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *reinterpret_cast<uint16_t*>(block) = __half_as_ushort(__float2half_rn(d));
    for (int j = 0; j < kKvBlock; ++j) block[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
  } else {
    const uint16_t dh = __half_as_ushort(__float2half_rn(amax / 448.0f));
    *reinterpret_cast<uint16_t*>(block) = dh;
    const float d = f16_bits_to_f32(dh);
    for (int j = 0; j < kKvBlock; ++j) block[2 + j] = d > 0.0f ? f32_to_fp8_e4m3_bits(x[j] / d) : 0;
  }
}

__host__ __device__ inline void store_kv(void* pool, DType t, int64_t i, float x) {
  if (t == DType::f16) {
    static_cast<uint16_t*>(pool)[i] = __half_as_ushort(__float2half_rn(x));
  } else if (t == DType::bf16) {
    const uint32_t f = f32_bits(x);
    static_cast<uint16_t*>(pool)[i] =
        (f & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((f >> 16) | 0x40u) : (uint16_t)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
  } else {
    static_cast<float*>(pool)[i] = x;
  }
}

}  // namespace tessera::gpu::kernels
