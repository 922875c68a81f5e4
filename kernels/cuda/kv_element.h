#pragma once
// One element of a KV pool on the device (kernels/kernel_args.h: f32, f16 or
// bf16), read as f32 and stored rounded to nearest even, as the reference's
// kernels/kv_element.h. The type is uniform over a launch, so the branch is.
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/gpu_device.h"

namespace tessera::gpu::kernels {

__device__ inline float load_kv(const void* pool, DType t, int64_t i) {
  if (t == DType::f16) return f16_bits_to_f32(static_cast<const uint16_t*>(pool)[i]);
  if (t == DType::bf16) return bf16_bits_to_f32(static_cast<const uint16_t*>(pool)[i]);
  return static_cast<const float*>(pool)[i];
}

__device__ inline void store_kv(void* pool, DType t, int64_t i, float x) {
  if (t == DType::f16) {
    static_cast<uint16_t*>(pool)[i] = __half_as_ushort(__float2half_rn(x));
  } else if (t == DType::bf16) {
    const uint32_t f = __float_as_uint(x);
    static_cast<uint16_t*>(pool)[i] =
        (f & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((f >> 16) | 0x40u) : (uint16_t)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
  } else {
    static_cast<float*>(pool)[i] = x;
  }
}

}  // namespace tessera::gpu::kernels
