#pragma once
// The matrix-unit instructions the kernels use, one wrapper each, shared by
// the prefill GEMM (kernels/cuda/matmul_gemm_mma.cu) and the rate probe
// (kernels/cuda/matrix_rate.cu). Operand layouts: kernels/cuda/matmul_mma_layout.h.
#include <cstdint>

namespace tessera::gpu::kernels {

#if !defined(TESSERA_GPU_HIP)
// D = A · B + D on one 16 × 8 × 16 piece, f16 in, f32 sums (sm_80 and later).
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// The same with bf16 in (sm_80 and later), the same fragment layout.
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#else
// A wave's 16 × 16 × 16 f16 piece (gfx908, gfx90a): __builtin_amdgcn_mfma_f32_16x16x16f16.
typedef _Float16 mfma_half4 __attribute__((ext_vector_type(4)));
typedef float mfma_float4 __attribute__((ext_vector_type(4)));
// bf16 operands as bit patterns: __builtin_amdgcn_mfma_f32_16x16x16bf16_1k
// (gfx90a only; gfx908 has 16x16x8 bf16, a different k).
typedef short mfma_short4 __attribute__((ext_vector_type(4)));

// D = A · B + D on a 16 × 16 × 16 piece, A and B as 16-bit patterns of
// f16 or (kBf16) bf16, f32 sums; traps where the target lacks the instruction.
template <bool kBf16>
__device__ __forceinline__ mfma_float4 mfma_16x16x16(mfma_short4 a, mfma_short4 b, mfma_float4 d) {
  if constexpr (kBf16) {
#if defined(__gfx90a__)
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, d, 0, 0, 0);
#else
    __builtin_trap();
    return d;
#endif
  } else {
#if defined(__gfx908__) || defined(__gfx90a__)
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(mfma_half4, a), __builtin_bit_cast(mfma_half4, b), d,
                                                 0, 0, 0);
#else
    __builtin_trap();
    return d;
#endif
  }
}
#endif

}  // namespace tessera::gpu::kernels
