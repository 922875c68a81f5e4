// The decode matmul: y[m, n] = x[m, k] · w[n, k]ᵀ for m <= kGemvMaxRows,
// where the time goes to streaming w once from memory. One warp per weight
// row (a 256-thread block holds 8 rows on 32-wide warps, 4 on 64-wide; a
// grid-stride loop covers any n), so each row's bytes are read exactly once
// for all m rows of x, and many rows are in flight per SM.
//
// Block types: lane l decodes units l, l + warpSize, ... (32 elements each,
// kernels/cuda/dequant.h), so a warp reads consecutive blocks of the row
// (coalesced) and keeps the unit's 32 weights in registers while it dots
// them with each x row (float4 loads where x rows are 16-byte aligned; x is
// small and stays in L1/L2 for every warp). Plain types: lane l takes
// elements 8l .. 8l + 7 of each 8·warpSize, as one or two 16-byte loads where
// the rows are 16-byte aligned, else one element at a time.
// Sums are f32 per lane, then warp_sum; lane 0 writes y (plus the residual).
#include <cstdint>

#include "kernels/cuda/dequant.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/matmul_paths.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;

// Σ v[i] · x[i] over one unit; four partial sums, for instruction-level parallelism.
__device__ __forceinline__ float dot32(const float (&v)[kUnit], const float* x, bool x_vec) {
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (x_vec) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll
    for (int q = 0; q < kUnit / 4; ++q) {
      const float4 xv = x4[q];
      s[0] += v[4 * q + 0] * xv.x;
      s[1] += v[4 * q + 1] * xv.y;
      s[2] += v[4 * q + 2] * xv.z;
      s[3] += v[4 * q + 3] * xv.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kUnit; ++i) s[i & 3] += v[i] * x[i];
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// Elements 8c .. 8c + 7 of a 16-byte aligned plain row.
__device__ __forceinline__ void load8_plain(DType t, const uint8_t* row, int64_t c, float (&v)[8]) {
  if (t == DType::f32) {
    const float4* p = reinterpret_cast<const float4*>(row) + 2 * c;
    const float4 a = p[0], b = p[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    return;
  }
  const uint4 q = reinterpret_cast<const uint4*>(row)[c];
  const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // element 2i in the low half of word i
    const uint16_t lo = (uint16_t)(words[i] & 0xffffu), hi = (uint16_t)(words[i] >> 16);
    v[2 * i] = t == DType::f16 ? f16_bits_to_f32(lo) : bf16_bits_to_f32(lo);
    v[2 * i + 1] = t == DType::f16 ? f16_bits_to_f32(hi) : bf16_bits_to_f32(hi);
  }
}

__device__ __forceinline__ float dot8(const float (&v)[8], const float* x) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4 a = x4[0], b = x4[1];
  return (v[0] * a.x + v[1] * a.y + v[2] * a.z + v[3] * a.w) + (v[4] * b.x + v[5] * b.y + v[6] * b.z + v[7] * b.w);
}

// x_vec: x rows start 16-byte aligned. plain_vec: so do w's rows (plain
// types) and k % 8 == 0, so a lane's 8 elements are whole 16-byte loads.
__global__ __launch_bounds__(kThreads) void matmul_gemv_kernel(const float* __restrict__ x, const uint8_t* __restrict__ w,
                                                               DType t, float* __restrict__ y,
                                                               const float* __restrict__ residual, int m, int64_t n,
                                                               int64_t k, int64_t row_bytes, bool x_vec, bool plain_vec) {
  const int lane = (int)threadIdx.x % warpSize;
  const int warp = (int)threadIdx.x / warpSize, warps = (int)blockDim.x / warpSize;
  // The row loop's bounds are the same for every lane of a warp, so all of
  // them reach warp_sum together.
  for (int64_t row = (int64_t)blockIdx.x * warps + warp; row < n; row += (int64_t)gridDim.x * warps) {
    const uint8_t* wr = w + row * row_bytes;
    float acc[kGemvMaxRows];
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r) acc[r] = 0.0f;

    if (is_block_type(t)) {
      for (int64_t u = lane; u < k / kUnit; u += warpSize) {
        float v[kUnit];
        decode_unit(t, wr, u, v);
#pragma unroll
        for (int r = 0; r < kGemvMaxRows; ++r)
          if (r < m) acc[r] += dot32(v, x + r * k + u * kUnit, x_vec);
      }
    } else if (plain_vec) {
      for (int64_t c = lane; c < k / 8; c += warpSize) {
        float v[8];
        load8_plain(t, wr, c, v);
#pragma unroll
        for (int r = 0; r < kGemvMaxRows; ++r)
          if (r < m) acc[r] += dot8(v, x + r * k + 8 * c);
      }
    } else {
      for (int64_t e = lane; e < k; e += warpSize) {
        const float wv = plain_at(t, wr, e);
#pragma unroll
        for (int r = 0; r < kGemvMaxRows; ++r)
          if (r < m) acc[r] += wv * x[r * k + e];
      }
    }

#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r) {
      if (r < m) {
        const float sum = warp_sum(acc[r]);
        if (lane == 0) y[r * n + row] = residual != nullptr ? sum + residual[r * n + row] : sum;
      }
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

gpuError_t launch_matmul_gemv(const MatmulArgs& a, const float* residual, gpuStream_t s) {
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const bool x_vec = aligned16(a.x) && a.k % 4 == 0;
  const bool plain_vec = x_vec && aligned16(a.w) && row_bytes % 16 == 0 && a.k % 8 == 0;
  // Blocks for 8 rows each (32-wide warps); the kernel's row loop covers the rest on 64-wide ones.
  const unsigned blocks = grid_for(a.n, kThreads / 32);
  matmul_gemv_kernel<<<blocks, kThreads, 0, s>>>(a.x, static_cast<const uint8_t*>(a.w), a.w_dtype, a.y, residual,
                                                  (int)a.m, a.n, a.k, row_bytes, x_vec, plain_vec);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
