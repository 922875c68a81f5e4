#pragma once
// The per-element formulas the CPU's standalone activation kernels and its
// elementwise programs share: one definition, so a fused program computes
// exactly what the unfused ops do (the portable files are built without FMA
// contraction, so the same expression gives the same bits everywhere).
#include <cmath>

namespace tessera::kernels::cpu::detail {

// llama2.c's formula, as silu_mul's.
inline float silu_f32(float x) { return x * (1.0f / (1.0f + expf(-x))); }

// ggml's ggml_gelu_f32: the tanh approximation.
inline float gelu_f32(float x) {
  constexpr float kGeluCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x)));
}

}  // namespace tessera::kernels::cpu::detail
