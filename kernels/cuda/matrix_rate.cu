// The device's dense matrix rate, measured for `tessera bench` (the roof a
// prefill GEMM and attention are held to): a kernel that does nothing but
// issue the matrix-unit instruction the GEMM uses, on registers, with
// kChains independent accumulators per warp to cover its latency, on
// enough blocks to fill every SM/CU several times over. Timed with events,
// the best of a few launches after a warm-up.
//
// What it measures is the instruction's rate, named in the result:
// mma.sync m16n8k16 f16 (sm_80+), MFMA 16x16x16 f16 (gfx908, gfx90a), or,
// without a matrix unit, f32 FMAs. On Hopper that is mma.sync's rate, below
// wgmma's (which the GEMM does not use yet).
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/matmul_paths.h"
#include "kernels/cuda/matrix_units.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kChains = 8;
constexpr int kIters = 1024;
constexpr int kBlocksPerUnit = 8;

// Each kernel stores its sums only when `store` is set (never, at run
// time): the compiler cannot drop the work.
#if !defined(TESSERA_GPU_HIP)
__global__ __launch_bounds__(kThreads) void mma_sync_rate_kernel(float* out, int store) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t one = 0x3c003c00u;  // two f16 1.0s: sums stay finite (kIters * 16 at most)
  const uint32_t a[4] = {one, one, one, one};
  const uint32_t b[2] = {one ^ threadIdx.x % 2, one};
  float d[kChains][4] = {};
  for (int i = 0; i < kIters; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) mma_m16n8k16(d[c], a, b);
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (store) out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
  __trap();  // never launched below sm_80
#endif
}
#else
__global__ __launch_bounds__(kThreads) void mfma_rate_kernel(float* out, int store) {
#if defined(__gfx908__) || defined(__gfx90a__)
  const mfma_half4 a = {(_Float16)1.0f, (_Float16)1.0f, (_Float16)1.0f, (_Float16)(threadIdx.x % 2)};
  mfma_float4 d[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) d[c] = mfma_float4{0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = 0; i < kIters; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) d[c] = __builtin_amdgcn_mfma_f32_16x16x16f16(a, a, d[c], 0, 0, 0);
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (store) out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
  __builtin_trap();  // never launched: no MFMA on this target
#endif
}
#endif

__global__ __launch_bounds__(kThreads) void fma_rate_kernel(float* out, int store) {
  float d[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) d[c] = (float)(threadIdx.x + c);
  const float x = 0.999f, y = 0.001f;
  for (int i = 0; i < kIters * 16; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) d[c] = fmaf(d[c], x, y);
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += d[c];
  if (store) out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

}  // namespace

gpuError_t measure_matrix_rate(MatrixRate& r, gpuStream_t s) {
  int dev = 0;
  gpuDeviceProp_t p{};
  gpuError_t e = gpuGetDevice(&dev);
  if (e == gpuSuccess) e = gpuGetDeviceProperties(&p, dev);
  if (e != gpuSuccess) return e;
  const GemmPath path = gemm_path_for(p);
  const unsigned blocks = (unsigned)(p.multiProcessorCount * kBlocksPerUnit);
  const double warps = (double)blocks * kThreads / p.warpSize;
  double flops = 0;  // per launch
  auto launch = [&] {
    switch (path) {
#if !defined(TESSERA_GPU_HIP)
      case GemmPath::mma_sync:
        mma_sync_rate_kernel<<<blocks, kThreads, 0, s>>>(nullptr, 0);
        flops = warps * kIters * kChains * (2.0 * 16 * 8 * 16);
        r.what = "mma.sync m16n8k16 f16, f32 sums";
        break;
#else
      case GemmPath::mfma_f16_bf16:
      case GemmPath::mfma_f16:
        mfma_rate_kernel<<<blocks, kThreads, 0, s>>>(nullptr, 0);
        flops = warps * kIters * kChains * (2.0 * 16 * 16 * 16);
        r.what = "MFMA 16x16x16 f16, f32 sums";
        break;
#endif
      default:
        fma_rate_kernel<<<blocks, kThreads, 0, s>>>(nullptr, 0);
        flops = (double)blocks * kThreads * kIters * 16 * kChains * 2.0;
        r.what = "f32 FMA (no matrix unit)";
        break;
    }
    return gpuGetLastError();
  };
  gpuEvent_t start = nullptr, stop = nullptr;
  if ((e = gpuEventCreate(&start)) != gpuSuccess) return e;
  if ((e = gpuEventCreate(&stop)) != gpuSuccess) {
    (void)gpuEventDestroy(start);
    return e;
  }
  float best_ms = 0;
  e = launch();  // warm-up: clocks up, code loaded
  for (int rep = 0; rep < 5 && e == gpuSuccess; ++rep) {
    float ms = 0;
    if ((e = gpuEventRecord(start, s)) != gpuSuccess || (e = launch()) != gpuSuccess ||
        (e = gpuEventRecord(stop, s)) != gpuSuccess || (e = gpuEventSynchronize(stop)) != gpuSuccess ||
        (e = gpuEventElapsedTime(&ms, start, stop)) != gpuSuccess)
      break;
    if (ms > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
  }
  (void)gpuEventDestroy(start);
  (void)gpuEventDestroy(stop);
  if (e != gpuSuccess) return e;
  r.gflops = best_ms > 0 ? flops / best_ms / 1e6 : 0;
  return gpuSuccess;
}

}  // namespace tessera::gpu::kernels
