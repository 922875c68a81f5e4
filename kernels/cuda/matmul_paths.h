#pragma once
// The matmul's two paths, behind kernels/cuda/matmul.cu's launchers (which
// check the arguments and pick one): a weight-streaming GEMV for the few
// rows of x of a decode step (kernels/cuda/matmul_gemv.cu) and a tiled GEMM
// for prefill (kernels/cuda/matmul_gemm.cu). Both write y = x · wᵀ, plus
// residual[m, n] when it is non-null, and return the launch's error.
// Arguments reach them checked: m, n > 0, k >= 0 a whole number of blocks,
// a dtype matmul_reads says yes to, standard row layout, no epilogue.
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

// The most rows of x the GEMV takes; more go to the GEMM.
inline constexpr int64_t kGemvMaxRows = 8;

gpuError_t launch_matmul_gemv(const MatmulArgs& a, const float* residual, gpuStream_t s);
gpuError_t launch_matmul_gemm(const MatmulArgs& a, const float* residual, gpuStream_t s);

}  // namespace tessera::gpu::kernels
