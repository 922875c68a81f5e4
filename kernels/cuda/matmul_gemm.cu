// The prefill matmul without a matrix unit: y[m, n] = x[m, k] · w[n, k]ᵀ for
// m > kGemvMaxRows, every weight dtype, in f32 on the ordinary cores. It runs
// where matmul.cu finds no matrix unit (gfx1030 and other RDNA; NVIDIA
// below sm_80, which this build does not target): the slower path, and
// `tessera devices` says so ("prefill GEMM: tiled f32 (no matrix unit)").
// A 256-thread block computes a 64 × 64 tile of y (64 rows of x against 64
// weight rows), walking k 32 at a time: it stages x[64, 32] and
// the weights' [64, 32], dequantized to f32, in shared memory, then each
// thread accumulates a 4 × 4 register block from them. Grid-stride loops over
// the tiles keep the grid inside its limits for any m and n.
//
// Staging: x and plain weights one element per thread per step (a warp reads
// 32 consecutive floats of one row: coalesced); block-type weights one
// 32-element unit per thread (kernels/cuda/dequant.h), 64 of the 256 threads
// decoding while the rest wait at the barrier.
//
// The matrix-unit version (mma.sync on NVIDIA sm_80+, MFMA on gfx908 and
// gfx90a) is kernels/cuda/matmul_gemm_mma.cu, with the weights staged the
// same way but in f16; wgmma (sm_90) and RDNA3's WMMA are not written yet.
#include <cstdint>

#include "kernels/cuda/dequant.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/matmul_paths.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kTileM = 64, kTileN = 64, kTileK = kUnit;
constexpr int kGrid = 16;          // threads per side of the 16 × 16 thread grid
constexpr int kPer = kTileM / kGrid;  // outputs per thread per side: 4 × 4
static_assert(kGrid * kGrid == kThreads && kTileN / kGrid == kPer);

// Thread (ty, tx) owns tile rows ty + 16i and columns tx + 16j, so a warp
// reads 2 rows of xs (broadcast) and 16 of ws per step; rows padded to 33
// floats put those 16 in distinct banks.
__global__ __launch_bounds__(kThreads) void gemm_tiled_f32_kernel(const float* __restrict__ x,
                                                                  const uint8_t* __restrict__ w, DType t,
                                                                  float* __restrict__ y,
                                                                  const float* __restrict__ residual, int64_t m,
                                                                  int64_t n, int64_t k, int64_t row_bytes) {
  __shared__ float xs[kTileM][kTileK + 1];
  __shared__ float ws[kTileN][kTileK + 1];
  const int tid = (int)threadIdx.x, tx = tid % kGrid, ty = tid / kGrid;
  const bool blocks = is_block_type(t);

  for (int64_t m0 = (int64_t)blockIdx.y * kTileM; m0 < m; m0 += (int64_t)gridDim.y * kTileM) {
    for (int64_t n0 = (int64_t)blockIdx.x * kTileN; n0 < n; n0 += (int64_t)gridDim.x * kTileN) {
      float acc[kPer][kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i)
#pragma unroll
        for (int j = 0; j < kPer; ++j) acc[i][j] = 0.0f;

      for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
        // Past m, n or k the tiles hold zeros, which add nothing.
        for (int i = tid; i < kTileM * kTileK; i += kThreads) {
          const int r = i / kTileK, c = i % kTileK;
          const int64_t gm = m0 + r, gk = k0 + c;
          xs[r][c] = gm < m && gk < k ? x[gm * k + gk] : 0.0f;
        }
        if (blocks) {
          for (int r = tid; r < kTileN; r += kThreads) {  // k is whole units here
            const int64_t gn = n0 + r;
            float v[kUnit];
            if (gn < n) {
              decode_unit(t, w + gn * row_bytes, k0 / kUnit, v);
            } else {
#pragma unroll
              for (int c = 0; c < kUnit; ++c) v[c] = 0.0f;
            }
#pragma unroll
            for (int c = 0; c < kUnit; ++c) ws[r][c] = v[c];
          }
        } else {
          for (int i = tid; i < kTileN * kTileK; i += kThreads) {
            const int r = i / kTileK, c = i % kTileK;
            const int64_t gn = n0 + r, gk = k0 + c;
            ws[r][c] = gn < n && gk < k ? plain_at(t, w + gn * row_bytes, gk) : 0.0f;
          }
        }
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < kTileK; ++kk) {
          float a[kPer], b[kPer];
#pragma unroll
          for (int i = 0; i < kPer; ++i) a[i] = xs[ty + kGrid * i][kk];
#pragma unroll
          for (int j = 0; j < kPer; ++j) b[j] = ws[tx + kGrid * j][kk];
#pragma unroll
          for (int i = 0; i < kPer; ++i)
#pragma unroll
            for (int j = 0; j < kPer; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();  // the next step overwrites the tiles
      }

#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int64_t gm = m0 + ty + kGrid * i;
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          const int64_t gn = n0 + tx + kGrid * j;
          if (gm < m && gn < n) {
            const int64_t at = gm * n + gn;
            y[at] = residual != nullptr ? acc[i][j] + residual[at] : acc[i][j];
          }
        }
      }
    }
  }
}

unsigned tiles(int64_t extent, int tile) {
  const int64_t t = (extent + tile - 1) / tile;
  return (unsigned)(t < 1 ? 1 : t > kMaxGridBlocks ? kMaxGridBlocks : t);
}

}  // namespace

gpuError_t launch_matmul_gemm_tiled(const MatmulArgs& a, const float* residual, gpuStream_t s) {
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const dim3 grid(tiles(a.n, kTileN), tiles(a.m, kTileM));
  gemm_tiled_f32_kernel<<<grid, kThreads, 0, s>>>(a.x, static_cast<const uint8_t*>(a.w), a.w_dtype, a.y, residual, a.m,
                                                  a.n, a.k, row_bytes);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
