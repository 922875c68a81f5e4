// The prefill matmul on the matrix units: y[m, n] = x[m, k] · w[n, k]ᵀ
// (+ residual) for m > kGemvMaxRows, f16, bf16 and every block-type weight
// (f32 weights keep the tiled f32 kernel, matmul.cu), where the device has
// them: mma.sync m16n8k16 (f16 or bf16 in, f32 accumulate) on NVIDIA sm_80
// and later; v_mfma_f32_16x16x16f16 on AMD gfx908 and gfx90a, and
// v_mfma_f32_16x16x16bf16_1k on gfx90a only (gfx908's bf16 MFMA is
// 16x16x8, a different k: its bf16 weights keep the tiled kernel).
// matmul.cu picks this path from the device's properties (matmul_gemm_path);
// elsewhere (gfx1030, no matrix unit) gemm_tiled_f32_kernel runs instead.
// Two kernels per vendor: the tiles' 16-bit type, f16 (f16 and block-type
// weights) or bf16 (bf16 weights), is a template parameter.
//
// A 256-thread block computes a 128 × 64 tile of y (kernels/cuda/
// matmul_mma_layout.h), walking k 32 at a time: it stages x[128, 32] and the
// weights' [64, 32] in shared memory in that 16-bit type, then each warp
// (wave) feeds its piece of the tile to the matrix unit from there,
// accumulating in f32. Staging is the tiled kernel's: block-type weights one
// 32-element unit per thread (kernels/cuda/dequant.h), 64 threads decoding
// while the other 192 convert x; plain weights and x two elements per
// thread, all threads. Past m, n or k the tiles hold zeros. The residual is
// added at the store. Shared memory: 2 × 10240 bytes of x (x_hi, x_lo),
// 5120 of weights, staged once per k step in their 16-bit type.
//
// Precision. Plain f16 and bf16 weights are exact in their own type, so the
// only rounding would be x's: x is split in two, x = x_hi + x_lo with x_hi =
// round(x) and x_lo = round(x - x_hi) in the weights' 16-bit type (x - x_hi
// is exact in f32), both staged, and y = x_hi·w + x_lo·w: two passes on the
// matrix unit. x then keeps ~22 bits (f16: x - x_hi - x_lo within 2⁻²²·|x|)
// or ~17 bits (bf16: within 2⁻¹⁸·|x|) of its f32 value. The matrix unit's
// sums start from zero every 32 of k (`part`: 2 × 2 instructions deep) and
// are added to the running sum with ordinary f32 adds (round to nearest), so
// a truncating adder inside the unit (NVIDIA's tensor cores truncate) costs
// a 64-term chain's worth, not k's. In a CPU replay of the fragment layouts
// (m 9..513, n 1..200, k up to 4096, odd k, x and w in [-1, 1] as the
// conformance suite draws them) ||y - y_ref|| / ||y_ref|| against an f64
// GEMM of the f32 x is at most 2e-7 (f16) and 2.4e-6 (bf16) with exactly
// rounded instruction sums, 1.7e-6 and 2.5e-6 with every add in the unit
// rounding toward zero: within the suite's 1e-5 for plain weights, where the
// unsplit f16 x gave ~3e-4. Block-type weights keep ONE pass (x_hi only;
// `split` is block-uniform, from the dtype, not another kernel): their
// dequantized values are rounded to f16 anyway (not exact there), and the
// suite holds them to the q8 activation rounding's worst case, which
// 2⁻¹⁰·Σ|x·w| (x and w each within 2⁻¹¹ of their f32 values) is well
// inside: ~3.5e-4 relative, at most 0.25 of 2⁻¹⁰·Σ|x·w| in the replay.
// Ranges, f16 tiles: values below 2⁻¹⁴ in magnitude become subnormals
// (absolute error up to 2⁻²⁵ each, so x_lo carries its 11 bits only while
// |x| >~ 2⁻³; smaller x keeps ~2⁻²⁵ absolute), and values beyond f16's range
// (|v| > 65504) become infinities (NaN after the split): nothing checks for
// them at run time. Dequantized weights stay well inside that range, and so
// do most matmul inputs (RMS-normed); the FFN down projection's input,
// silu(gate)·up, is not normed, and a model with activation outliers beyond
// 65504 there would need the tiled path (TODO when a model shows one: a
// per-tensor scale, as fp8 GEMMs do). bf16 tiles have f32's range.
//
// Registers and occupancy (__launch_bounds__(256, 2)): sm_80 128 registers,
// no spills (both kernels); gfx908 128 VGPRs + 43 AGPRs, gfx90a 146 VGPRs,
// no scratch; 25600 bytes of shared memory per block.
#include <cstdint>

#include "kernels/cuda/dequant.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/matmul_mma_layout.h"
#include "kernels/cuda/matmul_paths.h"
#include "kernels/cuda/matrix_units.h"

namespace tessera::gpu::kernels {

namespace {

using namespace mma_layout;

// x_hi, x_lo and the weights, in static shared memory (48 KB at most without opting in).
static_assert((2 * kTileM + kTileN) * kStride * sizeof(uint16_t) <= 48 * 1024);

// v rounded to the tiles' 16-bit type, as its bit pattern, and back.
template <bool kBf16>
__device__ __forceinline__ uint32_t to16(float v) {
  if constexpr (kBf16) return bf16_bits_rn(__float_as_uint(v));
  else return __half_as_ushort(__float2half_rn(v));
}
template <bool kBf16>
__device__ __forceinline__ float from16(uint32_t b) {
  if constexpr (kBf16) return __uint_as_float(b << 16);
  else return __half2float(__ushort_as_half((unsigned short)b));
}

// x[m0 .., k0 ..] and w[n0 .., k0 ..] into the tiles.
struct TileOrigin {
  int64_t m0, n0, k0;
};
struct GemmOperands {
  const float* x;
  const uint8_t* w;
  DType t;
  int64_t m, n, k, row_bytes;
};

// Plain weights split x (xs = x_hi, xl = x_lo); block types stage xs only.
__device__ __forceinline__ bool splits_x(DType t) { return !is_block_type(t); }

template <bool kBf16>
__device__ __forceinline__ void stage_tiles(const GemmOperands& g, TileOrigin o, uint16_t (*xs)[kStride],
                                            uint16_t (*xl)[kStride], uint16_t (*ws)[kStride], int tid) {
  const bool blocks = is_block_type(g.t), split = splits_x(g.t);
  // Block types: threads 0 .. kTileN - 1 decode a weight row's unit each; the rest convert x.
  const int x_first = blocks ? kTileN : 0;
  if (tid >= x_first) {
    for (int p = tid - x_first; p < kTileM * kPairsPerRow; p += kThreads - x_first) {
      const int r = pair_row(p), c = pair_col(p);
      const int64_t gm = o.m0 + r, gk = o.k0 + c;
      const float* row = g.x + gm * g.k;
      const float v0 = gm < g.m && gk < g.k ? row[gk] : 0.0f;
      const float v1 = gm < g.m && gk + 1 < g.k ? row[gk + 1] : 0.0f;
      const uint32_t h0 = to16<kBf16>(v0), h1 = to16<kBf16>(v1);
      *reinterpret_cast<uint32_t*>(&xs[r][c]) = h0 | (h1 << 16);
      if (split) {  // x - x_hi is exact in f32
        const uint32_t l0 = to16<kBf16>(v0 - from16<kBf16>(h0)), l1 = to16<kBf16>(v1 - from16<kBf16>(h1));
        *reinterpret_cast<uint32_t*>(&xl[r][c]) = l0 | (l1 << 16);
      }
    }
  }
  if (blocks) {
    if (tid < kTileN) {  // k is whole units here; the tiles are f16
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
      for (int q = 0; q < kUnit / 8; ++q) {
        uint32_t w4[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) w4[e] = to16<kBf16>(v[8 * q + 2 * e]) | (to16<kBf16>(v[8 * q + 2 * e + 1]) << 16);
        dst[q] = make_uint4(w4[0], w4[1], w4[2], w4[3]);
      }
    }
  } else {  // f16 or bf16 weights, exact in the tiles' type
    for (int p = tid; p < kTileN * kPairsPerRow; p += kThreads) {
      const int r = pair_row(p), c = pair_col(p);
      const int64_t gn = o.n0 + r, gk = o.k0 + c;
      const uint8_t* row = g.w + gn * g.row_bytes;
      const float v0 = gn < g.n && gk < g.k ? plain_at(g.t, row, gk) : 0.0f;
      const float v1 = gn < g.n && gk + 1 < g.k ? plain_at(g.t, row, gk + 1) : 0.0f;
      *reinterpret_cast<uint32_t*>(&ws[r][c]) = to16<kBf16>(v0) | (to16<kBf16>(v1) << 16);
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

template <bool kBf16>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (kBf16) mma_m16n8k16_bf16(d, a, b);
  else mma_m16n8k16(d, a, b);
}

template <bool kBf16>
__global__ __launch_bounds__(kThreads, 2) void gemm_mma_sync_kernel(GemmOperands g, float* __restrict__ y,
                                                                 const float* __restrict__ residual) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never launched: matmul_gemm_path says tiled below sm_80
#else
  __shared__ __align__(16) uint16_t xs[kTileM][kStride];
  __shared__ __align__(16) uint16_t xl[kTileM][kStride];
  __shared__ __align__(16) uint16_t ws[kTileN][kStride];
  const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm0 = mma_warp_m0(warp), wn0 = mma_warp_n0(warp);
  const bool split = splits_x(g.t);

  for (int64_t m0 = (int64_t)blockIdx.y * kTileM; m0 < g.m; m0 += (int64_t)gridDim.y * kTileM) {
    for (int64_t n0 = (int64_t)blockIdx.x * kTileN; n0 < g.n; n0 += (int64_t)gridDim.x * kTileN) {
      // part: this k step's sums on the matrix unit; acc: their running sum (f32 adds, round to nearest).
      float acc[kMmaTilesM][kMmaTilesN][4], part[kMmaTilesM][kMmaTilesN][4];
#pragma unroll
      for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

      for (int64_t k0 = 0; k0 < g.k; k0 += kTileK) {
        stage_tiles<kBf16>(g, {m0, n0, k0}, xs, xl, ws, tid);
        __syncthreads();
#pragma unroll
        for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
          for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) part[i][j][e] = 0.0f;
#pragma unroll
        for (int kh = 0; kh < kTileK; kh += 16) {
          uint32_t a[kMmaTilesM][4], b[kMmaTilesN][2];
#pragma unroll
          for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
            for (int r = 0; r < 2; ++r)
              b[j][r] = *reinterpret_cast<const uint32_t*>(&ws[wn0 + 8 * j + mma_b_n(lane)][kh + mma_b_k(lane, r)]);
#pragma unroll
          for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
            for (int r = 0; r < 4; ++r)
              a[i][r] = *reinterpret_cast<const uint32_t*>(&xs[wm0 + 16 * i + mma_a_row(lane, r)][kh + mma_a_col(lane, r)]);
#pragma unroll
          for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
            for (int j = 0; j < kMmaTilesN; ++j) mma<kBf16>(part[i][j], a[i], b[j]);
          if (split) {  // the same weights against x_lo
#pragma unroll
            for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
              for (int r = 0; r < 4; ++r)
                a[i][r] = *reinterpret_cast<const uint32_t*>(&xl[wm0 + 16 * i + mma_a_row(lane, r)][kh + mma_a_col(lane, r)]);
#pragma unroll
            for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
              for (int j = 0; j < kMmaTilesN; ++j) mma<kBf16>(part[i][j], a[i], b[j]);
          }
        }
#pragma unroll
        for (int i = 0; i < kMmaTilesM; ++i)
#pragma unroll
          for (int j = 0; j < kMmaTilesN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e];
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
// instructions (the bf16 one gfx90a only), and matmul_gemm_path launches
// each kernel only there.
#if defined(__gfx90a__) || (defined(__gfx908__))
#define TS_MFMA_F16 1
#endif
#if defined(__gfx90a__)
#define TS_MFMA_BF16 1
#endif

template <bool kBf16>
__global__ __launch_bounds__(kThreads, 2) void gemm_mfma_kernel(GemmOperands g, float* __restrict__ y,
                                                             const float* __restrict__ residual) {
#if defined(TS_MFMA_F16)
  if constexpr (kBf16) {
#if !defined(TS_MFMA_BF16)
    __builtin_trap();  // never launched: gfx908's bf16 weights take the tiled kernel
    return;
#endif
  }
  using float4v = mfma_float4;
  __shared__ __attribute__((aligned(16))) uint16_t xs[kTileM][kStride];
  __shared__ __attribute__((aligned(16))) uint16_t xl[kTileM][kStride];
  __shared__ __attribute__((aligned(16))) uint16_t ws[kTileN][kStride];
  const int tid = (int)threadIdx.x, lane = tid % 64, wave = tid / 64;
  const int wm0 = mfma_wave_m0(wave), wn0 = mfma_wave_n0(wave);
  const int mn = mfma_ab_mn(lane), kq = mfma_ab_k(lane);
  const bool split = splits_x(g.t);

  for (int64_t m0 = (int64_t)blockIdx.y * kTileM; m0 < g.m; m0 += (int64_t)gridDim.y * kTileM) {
    for (int64_t n0 = (int64_t)blockIdx.x * kTileN; n0 < g.n; n0 += (int64_t)gridDim.x * kTileN) {
      // part: this k step's sums on the matrix unit; acc: their running sum (f32 adds, round to nearest).
      float4v acc[kMfmaTilesM][kMfmaTilesN], part[kMfmaTilesM][kMfmaTilesN];
#pragma unroll
      for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kMfmaTilesN; ++j) acc[i][j] = float4v{0.0f, 0.0f, 0.0f, 0.0f};

      for (int64_t k0 = 0; k0 < g.k; k0 += kTileK) {
        stage_tiles<kBf16>(g, {m0, n0, k0}, xs, xl, ws, tid);
        __syncthreads();
#pragma unroll
        for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
          for (int j = 0; j < kMfmaTilesN; ++j) part[i][j] = float4v{0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int kh = 0; kh < kTileK; kh += 16) {
          mfma_short4 a[kMfmaTilesM], b[kMfmaTilesN];
#pragma unroll
          for (int j = 0; j < kMfmaTilesN; ++j) b[j] = *reinterpret_cast<const mfma_short4*>(&ws[wn0 + 16 * j + mn][kh + kq]);
#pragma unroll
          for (int i = 0; i < kMfmaTilesM; ++i) a[i] = *reinterpret_cast<const mfma_short4*>(&xs[wm0 + 16 * i + mn][kh + kq]);
#pragma unroll
          for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
            for (int j = 0; j < kMfmaTilesN; ++j) part[i][j] = mfma_16x16x16<kBf16>(a[i], b[j], part[i][j]);
          if (split) {  // the same weights against x_lo
#pragma unroll
            for (int i = 0; i < kMfmaTilesM; ++i) a[i] = *reinterpret_cast<const mfma_short4*>(&xl[wm0 + 16 * i + mn][kh + kq]);
#pragma unroll
            for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
              for (int j = 0; j < kMfmaTilesN; ++j) part[i][j] = mfma_16x16x16<kBf16>(a[i], b[j], part[i][j]);
          }
        }
#pragma unroll
        for (int i = 0; i < kMfmaTilesM; ++i)
#pragma unroll
          for (int j = 0; j < kMfmaTilesN; ++j) acc[i][j] += part[i][j];
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
  const bool bf16 = a.w_dtype == DType::bf16;  // f32 weights never come here (matmul.cu)
#if defined(TESSERA_GPU_HIP)
  if (bf16) gemm_mfma_kernel<true><<<grid, kThreads, 0, s>>>(g, a.y, residual);
  else gemm_mfma_kernel<false><<<grid, kThreads, 0, s>>>(g, a.y, residual);
#else
  if (bf16) gemm_mma_sync_kernel<true><<<grid, kThreads, 0, s>>>(g, a.y, residual);
  else gemm_mma_sync_kernel<false><<<grid, kThreads, 0, s>>>(g, a.y, residual);
#endif
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
