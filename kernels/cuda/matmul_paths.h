#pragma once
// The matmul's paths, behind kernels/cuda/matmul.cu's launchers (which
// check the arguments and pick one): a weight-streaming GEMV for the few
// rows of x of a decode step (kernels/cuda/matmul_gemv.cu), and for prefill
// a GEMM on the matrix units where the device has them (mma.sync on sm_80+,
// MFMA on gfx908 / gfx90a: kernels/cuda/matmul_gemm_mma.cu, f16 or bf16
// inputs, x split in two for plain weights) or
// else the tiled f32 one (kernels/cuda/matmul_gemm.cu). All write
// y = x · wᵀ, plus residual[m, n] when it is non-null, and return the
// launch's error.
// Arguments reach them checked: m, n > 0, k >= 0 a whole number of blocks,
// a dtype matmul_reads says yes to, standard row layout, no epilogue.
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

// The most rows of x the GEMV takes; more go to the GEMM.
inline constexpr int64_t kGemvMaxRows = 8;

gpuError_t launch_matmul_gemv(const MatmulArgs& a, const float* residual, gpuStream_t s);
gpuError_t launch_matmul_gemm_mma(const MatmulArgs& a, const float* residual, gpuStream_t s);
gpuError_t launch_matmul_gemm_tiled(const MatmulArgs& a, const float* residual, gpuStream_t s);

// Which prefill GEMM runs on a device: mma.sync for f16, bf16 and block-type
// weights (sm_80+); MFMA for f16, bf16 and block types (gfx90a) or f16 and
// block types only (gfx908: its bf16 MFMA is 16x16x8); else the tiled f32
// kernel. f32 weights take the tiled kernel on every device.
enum class GemmPath { mma_sync, mfma_f16_bf16, mfma_f16, tiled_f32 };
GemmPath gemm_path_for(const gpuDeviceProp_t& p);

}  // namespace tessera::gpu::kernels
