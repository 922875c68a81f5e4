// Which multiply-add the matmul kernels run for a weight dtype: the compute
// roof `tessera bench --op matmul` compares a matmul with. Kept beside the
// kernels it describes (kernels/cpu/matmul.cpp's dispatch); a kernel that
// changes what it multiplies in changes this line too.
#include "kernels/cpu/cpu_kernels.h"

namespace tessera::kernels::cpu {

ComputeDtype matmul_compute_dtype(DType w_dtype, int64_t m) {
  (void)m;  // every row count runs the same arithmetic today; a bf16 or int8 GEMM for large m would not
  switch (w_dtype) {
    // f16 and bf16 weights are widened to f32 inside the tiles; oneDNN's sgemm (f32, m >= 64) is FMA too.
    case DType::f32:
    case DType::f16:
    case DType::bf16: return ComputeDtype::f32_fma;
    // Every block type quantizes x to 8-bit blocks and runs integer dots (vpdpbusd, vpmaddubsw, or scalar).
    default: return ComputeDtype::int8_dot;
  }
}

}  // namespace tessera::kernels::cpu
