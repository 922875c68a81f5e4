// The prefill matmul on the matrix units: y[m, n] = x[m, k] · w[n, k]ᵀ
// (+ residual) for m > kGemvMaxRows, f16 and every block-type weight (f32
// and bf16 weights keep the tiled f32 kernel, matmul.cu), where the device
// has them: mma.sync m16n8k16 (f16 in, f32 accumulate) on
// NVIDIA sm_80 and later, v_mfma_f32_16x16x16f16 on AMD gfx908 and gfx90a.
// matmul.cu picks this path from the device's properties (matmul_gemm_path);
// elsewhere (gfx1030, no matrix unit) gemm_tiled_f32_kernel runs instead.
//
// A 256-thread block computes a 128 × 64 tile of y (kernels/cuda/
// matmul_mma_layout.h), walking k 32 at a time: it stages x[128, 32] and the
// weights' [64, 32] in shared memory as f16, then each warp (wave) feeds its
// piece of the tile to the matrix unit from there, accumulating in f32.
// Staging is the tiled kernel's: block-type weights one 32-element unit per
// thread (kernels/cuda/dequant.h), 64 threads decoding while the other 192
// convert x; plain weights and x two elements per thread, all threads.
// Past m, n or k the tiles hold zeros. The residual is added at the store.
//
// Precision: x and the dequantized weights are rounded to f16 (11 significant
// bits, round to nearest even), products and sums are f32. Each product is
// then within 2 · 2⁻¹¹ of its f32 value, so |y - y_f32| <= ~1e-3 · Σ|x·w|;
// on random data the relative error ||y - y_ref|| / ||y_ref|| is ~3e-4,
// independent of k (checked up to k = 4096 in a CPU replay of the fragment
// layouts), against ~1e-6 for the tiled f32 kernel. Values below 2⁻¹⁴ in
// magnitude become f16 subnormals (absolute error up to 2⁻²⁵), and values
// beyond f16's range (|v| > 65504) become infinities: nothing checks for
// them at run time. Dequantized weights stay well inside that range, and so
// do most matmul inputs (RMS-normed); the FFN down projection's input,
// silu(gate)·up, is not normed, and a model with activation outliers beyond
// 65504 there would need the tiled path (TODO when a model shows one: a
// per-tensor scale, as fp8 GEMMs do).
#include <cstdint>

#include "kernels/cuda/dequant.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/matmul_mma_layout.h"
#include "kernels/cuda/matmul_paths.h"
#include "kernels/cuda/matrix_units.h"

namespace tessera::gpu::kernels {

namespace {

using namespace mma_layout;

__device__ __forceinline__ uint32_t f16_pair(float lo, float hi) {
  return (uint32_t)__half_as_ushort(__float2half_rn(lo)) | ((uint32_t)__half_as_ushort(__float2half_rn(hi)) << 16);
}

// x[m0 .., k0 ..] and w[n0 .., k0 ..] into xs and ws, as f16.
struct TileOrigin {
  int64_t m0, n0, k0;
};
struct GemmOperands {
  const float* x;
  const uint8_t* w;
  DType t;
  int64_t m, n, k, row_bytes;
};

__device__ __forceinline__ void stage_tiles(const GemmOperands& g, TileOrigin o, uint16_t (*xs)[kStride],
                                            uint16_t (*ws)[kStride], int tid) {
  const bool blocks = is_block_type(g.t);
  // Block types: threads 0 .. kTileN - 1 decode a weight row's unit each; the rest convert x.
  const int x_first = blocks ? kTileN : 0;
  if (tid >= x_first) {
    for (int p = tid - x_first; p < kTileM * kPairsPerRow; p += kThreads - x_first) {
      const int r = pair_row(p), c = pair_col(p);
      const int64_t gm = o.m0 + r, gk = o.k0 + c;
      const float* row = g.x + gm * g.k;
      const float lo = gm < g.m && gk < g.k ? row[gk] : 0.0f;
      const float hi = gm < g.m && gk + 1 < g.k ? row[gk + 1] : 0.0f;
      *reinterpret_cast<uint32_t*>(&xs[r][c]) = f16_pair(lo, hi);
    }
  }
  if (blocks) {
    if (tid < kTileN) {  // k is whole units here
      const int64_t gn = o.n0 + tid;
      float v[kUnit];
      if (gn < g.n) {
        decode_unit(g.t, g.w + gn * g.row_bytes, o.k0 / kUnit, v);
      } else {
#pragma unroll
        for (int c = 0; c < kUnit; ++c) v[c] = 0.0f;
      }
      uint4* dst = reinterpret_cast<uint4*>(&ws[tid][0]);
#pragma unroll
      for (int q = 0; q < kUnit / 8; ++q)
        dst[q] = make_uint4(f16_pair(v[8 * q + 0], v[8 * q + 1]), f16_pair(v[8 * q + 2], v[8 * q + 3]),
                            f16_pair(v[8 * q + 4], v[8 * q + 5]), f16_pair(v[8 * q + 6], v[8 * q + 7]));
    }
  } else {
    for (int p = tid; p < kTileN * kPairsPerRow; p += kThreads) {
      const int r = pair_row(p), c = pair_col(p);
      const int64_t gn = o.n0 + r, gk = o.k0 + c;
      const uint8_t* row = g.w + gn * g.row_bytes;
      const float lo = gn < g.n && gk < g.k ? plain_at(g.t, row, gk) : 0.0f;
      const float hi = gn < g.n && gk + 1 < g.k ? plain_at(g.t, row, gk + 1) : 0.0f;
      *reinterpret_cast<uint32_t*>(&ws[r][c]) = f16_pair(lo, hi);
    }
  }
}

__device__ __forceinline__ void store_output(float* y, const float* residual, int64_t m, int64_t n, int64_t gm,
                                             int64_t gn, float v) {
  if (gm < m && gn < n) {
    const int64_t at = gm * n + gn;
    y[at] = residual != nullptr ? v + residual[at] : v;
  }
}

#if !defined(TESSERA_GPU_HIP)

__global__ __launch_bounds__(kThreads) void gemm_mma_sync_f16_kernel(GemmOperands g, float* __restrict__ y,
                                                                     const float* __restrict__ residual) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never launched: matmul_gemm_path says tiled below sm_80
#else
  __shared__ __align__(16) uint16_t xs[kTileM][kStride];
  __shared__ __align__(16) uint16_t ws[kTileN][kStride];
  const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm0 = mma_warp_m0(warp), wn0 = mma_warp_n0(warp);

  for (int64_t m0 = (int64_t)blockIdx.y * kTileM; m0 < g.m; m0 += (int64_t)gridDim.y * kTileM) {
    for (int64_t n0 = (int64_t)blockIdx.x * kTileN; n0 < g.n; n0 += (int64_t)gridDim.x * kTileN) {
      float acc[kMmaTilesM][kMmaTilesN][4];
#pragma unroll
      for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

      for (int64_t k0 = 0; k0 < g.k; k0 += kTileK) {
        stage_tiles(g, {m0, n0, k0}, xs, ws, tid);
        __syncthreads();
#pragma unroll
        for (int kh = 0; kh < kTileK; kh += 16) {
          uint32_t a[kMmaTilesM][4], b[kMmaTilesN][2];
#pragma unroll
          for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
            for (int r = 0; r < 4; ++r)
              a[i][r] = *reinterpret_cast<const uint32_t*>(&xs[wm0 + 16 * i + mma_a_row(lane, r)][kh + mma_a_col(lane, r)]);
#pragma unroll
          for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
            for (int r = 0; r < 2; ++r)
              b[j][r] = *reinterpret_cast<const uint32_t*>(&ws[wn0 + 8 * j + mma_b_n(lane)][kh + mma_b_k(lane, r)]);
#pragma unroll
          for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
            for (int j = 0; j < kMmaTilesN; ++j) mma_m16n8k16(acc[i][j], a[i], b[j]);
        }
        __syncthreads();  // the next step overwrites the tiles
      }

#pragma unroll
      for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            store_output(y, residual, g.m, g.n, m0 + wm0 + 16 * i + mma_c_row(lane, e), n0 + wn0 + 8 * j + mma_c_col(lane, e),
                         acc[i][j][e]);
    }
  }
#endif
}

#else  // TESSERA_GPU_HIP

// Compiled for every --offload-arch; only gfx908 and gfx90a have the MFMA
// instruction, and matmul_gemm_path launches the kernel only there.
__global__ __launch_bounds__(kThreads) void gemm_mfma_f16_kernel(GemmOperands g, float* __restrict__ y,
                                                                 const float* __restrict__ residual) {
#if defined(__gfx908__) || defined(__gfx90a__)
  using half4 = mfma_half4;
  using float4v = mfma_float4;
  __shared__ __attribute__((aligned(16))) uint16_t xs[kTileM][kStride];
  __shared__ __attribute__((aligned(16))) uint16_t ws[kTileN][kStride];
  const int tid = (int)threadIdx.x, lane = tid % 64, wave = tid / 64;
  const int wm0 = mfma_wave_m0(wave), wn0 = mfma_wave_n0(wave);
  const int mn = mfma_ab_mn(lane), kq = mfma_ab_k(lane);

  for (int64_t m0 = (int64_t)blockIdx.y * kTileM; m0 < g.m; m0 += (int64_t)gridDim.y * kTileM) {
    for (int64_t n0 = (int64_t)blockIdx.x * kTileN; n0 < g.n; n0 += (int64_t)gridDim.x * kTileN) {
      float4v acc[kMfmaTilesM][kMfmaTilesN];
#pragma unroll
      for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kMfmaTilesN; ++j) acc[i][j] = float4v{0.0f, 0.0f, 0.0f, 0.0f};

      for (int64_t k0 = 0; k0 < g.k; k0 += kTileK) {
        stage_tiles(g, {m0, n0, k0}, xs, ws, tid);
        __syncthreads();
#pragma unroll
        for (int kh = 0; kh < kTileK; kh += 16) {
          half4 a[kMfmaTilesM], b[kMfmaTilesN];
#pragma unroll
          for (int i = 0; i < kMfmaTilesM; ++i) a[i] = *reinterpret_cast<const half4*>(&xs[wm0 + 16 * i + mn][kh + kq]);
#pragma unroll
          for (int j = 0; j < kMfmaTilesN; ++j) b[j] = *reinterpret_cast<const half4*>(&ws[wn0 + 16 * j + mn][kh + kq]);
#pragma unroll
          for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
            for (int j = 0; j < kMfmaTilesN; ++j)
              acc[i][j] = __builtin_amdgcn_mfma_f32_16x16x16f16(a[i], b[j], acc[i][j], 0, 0, 0);
        }
        __syncthreads();  // the next step overwrites the tiles
      }

#pragma unroll
      for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kMfmaTilesN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            store_output(y, residual, g.m, g.n, m0 + wm0 + 16 * i + mfma_d_row(lane, e), n0 + wn0 + 16 * j + mfma_d_col(lane),
                         acc[i][j][e]);
    }
  }
#else
  __builtin_trap();  // never launched: no MFMA on this target
#endif
}

#endif  // TESSERA_GPU_HIP

unsigned tiles(int64_t extent, int tile) {
  const int64_t t = (extent + tile - 1) / tile;
  return (unsigned)(t < 1 ? 1 : t > kMaxGridBlocks ? kMaxGridBlocks : t);
}

}  // namespace

gpuError_t launch_matmul_gemm_mma(const MatmulArgs& a, const float* residual, gpuStream_t s) {
  const GemmOperands g{a.x, static_cast<const uint8_t*>(a.w), a.w_dtype, a.m, a.n, a.k,
                       (int64_t)bytes_for(a.w_dtype, a.k)};
  const dim3 grid(tiles(a.n, kTileN), tiles(a.m, kTileM));
#if defined(TESSERA_GPU_HIP)
  gemm_mfma_f16_kernel<<<grid, kThreads, 0, s>>>(g, a.y, residual);
#else
  gemm_mma_sync_f16_kernel<<<grid, kThreads, 0, s>>>(g, a.y, residual);
#endif
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
