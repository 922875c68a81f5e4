// The matmul launchers (kernels/cuda/launch.h): the arguments checked, then
// the GEMV (m <= kGemvMaxRows: decode, bound by reading w) or a GEMM
// (prefill): on the matrix units where the current device has them
// (kernels/cuda/matmul_gemm_mma.cu) for f16, bf16 and every block-type
// weight: mma.sync f16 / bf16 on sm_80+, MFMA f16 / bf16 on gfx90a, MFMA
// f16 on gfx908 (whose bf16 MFMA is 16x16x8, another k: its bf16 weights
// take the tiled kernel). f32 weights, and every weight on a device without
// a matrix unit, take the tiled f32 GEMM: f16 or bf16 tiles would round the
// weights themselves (x is split in two, f32-level, but w is not). matmul_add
// is the same kernels with the residual added as each output is stored. The choice is the device's, asked once per device ordinal and
// cached; matmul_gemm_path names it for `tessera devices`.
#include <atomic>
#include <string_view>

#include "kernels/cuda/dequant.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/matmul_paths.h"

namespace tessera::gpu::kernels {

namespace {

// The current device's GEMM path: 0 not asked yet, else GemmPath + 1, per ordinal.
constexpr int kCachedDevices = 64;
std::atomic<int> g_gemm_path[kCachedDevices];

GemmPath current_gemm_path() {
  int dev = 0;
  if (gpuGetDevice(&dev) != gpuSuccess || dev < 0 || dev >= kCachedDevices) return GemmPath::tiled_f32;
  int known = g_gemm_path[dev].load(std::memory_order_relaxed);
  if (known == 0) {
    gpuDeviceProp_t p{};
    if (gpuGetDeviceProperties(&p, dev) != gpuSuccess) return GemmPath::tiled_f32;
    known = (int)gemm_path_for(p) + 1;
    g_gemm_path[dev].store(known, std::memory_order_relaxed);
  }
  return (GemmPath)(known - 1);
}

gpuError_t run_matmul(const MatmulArgs& a, const float* residual, gpuStream_t s) {
  // Epilogue programs and the rows_x4 block order are the CPU kernels' (this
  // backend runs the packed ops' epilogues as split_silu_mul / split_qkv).
  if (a.epilogue != nullptr || a.w_layout != WeightLayout::rows || !matmul_reads(a.w_dtype)) return gpuErrorInvalidValue;
  if (a.m < 0 || a.n < 0 || a.k < 0 || !is_whole_blocks(a.w_dtype, a.k)) return gpuErrorInvalidValue;
  if (a.m == 0 || a.n == 0) return gpuSuccess;
  if (a.m <= kGemvMaxRows) return launch_matmul_gemv(a, residual, s);
  // f32 weights keep f32 staging: 16-bit tiles would round the weights
  // themselves (x is split in two there; w is staged once).
  const GemmPath path = current_gemm_path();
  if (a.w_dtype == DType::f32 || path == GemmPath::tiled_f32 || (a.w_dtype == DType::bf16 && path == GemmPath::mfma_f16))
    return launch_matmul_gemm_tiled(a, residual, s);
  return launch_matmul_gemm_mma(a, residual, s);
}

}  // namespace

GemmPath gemm_path_for(const gpuDeviceProp_t& p) {
#if defined(TESSERA_GPU_HIP)
  // "gfx90a:sramecc+:xnack-": the kernel's MFMA body is built for these two
  // targets only (gfx94x has MFMA too, but this build's hipcc has no gfx94x).
  // gfx908's bf16 MFMA is 16x16x8 (another k than the kernel's 16): f16 only there.
  const std::string_view arch = p.gcnArchName;
  if (arch.substr(0, 6) == "gfx90a") return GemmPath::mfma_f16_bf16;
  if (arch.substr(0, 6) == "gfx908") return GemmPath::mfma_f16;
#else
  if (p.major >= 8) return GemmPath::mma_sync;
#endif
  return GemmPath::tiled_f32;
}

const char* matmul_gemm_path(const gpuDeviceProp_t& p) {
  switch (gemm_path_for(p)) {
    case GemmPath::mma_sync: return "prefill GEMM: mma.sync f16/bf16 (sm_80+; f32 weights: tiled f32)";
    case GemmPath::mfma_f16_bf16: return "prefill GEMM: MFMA f16/bf16 (gfx90a; f32 weights: tiled f32)";
    case GemmPath::mfma_f16:
      return "prefill GEMM: MFMA f16 (gfx908; f32 weights, and bf16 (no 16x16x16 bf16 MFMA): tiled f32)";
    case GemmPath::tiled_f32: break;
  }
  return "prefill GEMM: tiled f32 (no matrix unit)";
}

void prepare_launchers() { (void)current_gemm_path(); }

bool matmul_reads(DType w) { return is_plain_float(w) || is_block_type(w); }

gpuError_t matmul(const MatmulArgs& a, gpuStream_t s) { return run_matmul(a, nullptr, s); }

gpuError_t matmul_add(const MatmulAddArgs& a, gpuStream_t s) {
  if (a.residual == nullptr) return gpuErrorInvalidValue;
  return run_matmul(a.mm, a.residual, s);
}

}  // namespace tessera::gpu::kernels
