#pragma once
// The device side of kernels/cuda/gpu_runtime.h, for the .cu files only
// (nvcc, or hipcc with -x hip): the language runtime, and the few things
// that differ between CUDA and HIP written once here. Nothing here assumes a
// warp size: NVIDIA's is 32, AMD's 64 on CDNA (gfx908, gfx90a) and 32 on
// RDNA (gfx1030); `warpSize` says which.
#include <cstdint>
#include <cstring>

#if defined(TESSERA_GPU_HIP)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define TS_SHFL_XOR(v, lane_mask) __shfl_xor((v), (lane_mask))
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define TS_SHFL_XOR(v, lane_mask) __shfl_xor_sync(0xffffffffu, (v), (lane_mask))
#endif
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu::kernels {

// A float's bits and back, on the device and the host alike (the host runs
// the KV block code in tests/gpu_host).
__host__ __device__ inline uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
__host__ __device__ inline float f32_from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// GGUF's f16 and bf16 are raw 16-bit words in the weight bytes.
__host__ __device__ inline float f16_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__host__ __device__ inline float bf16_bits_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

// Sum and max over a warp; every lane gets the result.
__device__ inline float warp_sum(float v) {
  for (int o = warpSize / 2; o > 0; o >>= 1) v += TS_SHFL_XOR(v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = warpSize / 2; o > 0; o >>= 1) v = fmaxf(v, TS_SHFL_XOR(v, o));
  return v;
}

// Sum and max over the whole block (blockDim.x a multiple of warpSize, at
// most 1024 threads); every thread gets the result. `scratch` is shared
// memory of at least 32 floats, free for reuse after the call returns.
__device__ inline float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, warps = blockDim.x / warpSize;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}
__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, warps = blockDim.x / warpSize;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

// Grid-stride loops launch at most this many blocks: more only add scheduling.
inline constexpr int64_t kMaxGridBlocks = 65535;

inline unsigned grid_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return (unsigned)(b < 1 ? 1 : b > kMaxGridBlocks ? kMaxGridBlocks : b);
}

}  // namespace tessera::gpu::kernels
