// Which multiply-add the matmul kernels run for a weight dtype: the compute
// roof `tessera bench --op matmul` compares a matmul with. Kept beside the
// kernels it describes (kernels/cpu/matmul.cpp's dispatch); a kernel that
// changes what it multiplies in changes this line too.
#include "kernels/cpu/cpu_kernels.h"

namespace tessera::kernels::cpu {

ComputeDtype matmul_compute_dtype(DType w_dtype, int64_t m) {
  switch (w_dtype) {
    // f16 and bf16 weights are widened to f32 inside the tiles and the FMA
    // panels; oneDNN's sgemm (f32, m >= 64) is FMA too. bf16's panels on a
    // CPU with AVX512-BF16 under TESSERA_CPU_BF16_DOT=1 multiply in bf16
    // (vdpbf16ps), which their kernel
    // name says (at every m, batch_invariant or not).
    case DType::bf16:
      if (matmul_kernel_name(w_dtype, m).ends_with("__avx512bf16")) return ComputeDtype::bf16_dot;
      return ComputeDtype::f32_fma;
    case DType::f32:
    case DType::f16: return ComputeDtype::f32_fma;
    // Every block type quantizes x to 8-bit blocks and runs integer dots (vpdpbusd, vpmaddubsw, or scalar).
    default: return ComputeDtype::int8_dot;
  }
}

}  // namespace tessera::kernels::cpu
