// The matmul launchers (kernels/cuda/launch.h): the arguments checked, then
// the GEMV (m <= kGemvMaxRows: decode, bound by reading w) or the tiled GEMM
// (prefill). matmul_add is the same kernels with the residual added as each
// output is stored. The matrix-unit GEMMs, when they come, are chosen here
// (by dtype, m and the device) ahead of the general tiled one.
#include "kernels/cuda/dequant.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/matmul_paths.h"

namespace tessera::gpu::kernels {

namespace {

gpuError_t run_matmul(const MatmulArgs& a, const float* residual, gpuStream_t s) {
  // Epilogue programs and the rows_x4 block order are the CPU kernels' (this
  // backend runs the packed ops' epilogues as split_silu_mul / split_qkv).
  if (a.epilogue != nullptr || a.w_layout != WeightLayout::rows || !matmul_reads(a.w_dtype)) return gpuErrorInvalidValue;
  if (a.m < 0 || a.n < 0 || a.k < 0 || !is_whole_blocks(a.w_dtype, a.k)) return gpuErrorInvalidValue;
  if (a.m == 0 || a.n == 0) return gpuSuccess;
  if (a.m <= kGemvMaxRows) return launch_matmul_gemv(a, residual, s);
  return launch_matmul_gemm(a, residual, s);
}

}  // namespace

bool matmul_reads(DType w) { return is_plain_float(w) || is_block_type(w); }

gpuError_t matmul(const MatmulArgs& a, gpuStream_t s) { return run_matmul(a, nullptr, s); }

gpuError_t matmul_add(const MatmulAddArgs& a, gpuStream_t s) {
  if (a.residual == nullptr) return gpuErrorInvalidValue;
  return run_matmul(a.mm, a.residual, s);
}

}  // namespace tessera::gpu::kernels
