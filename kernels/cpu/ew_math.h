#pragma once
// The per-element formulas the CPU's standalone activation kernels and its
// elementwise programs share: one definition, so a fused program computes
// exactly what the unfused ops do (the portable files are built without FMA
// contraction, so the same expression gives the same bits everywhere).
#include <cmath>
#include <cstdint>

#include "core/half.h"

namespace tessera::kernels::cpu::detail {

// llama2.c's formula, as silu_mul's.
inline float silu_f32(float x) { return x * (1.0f / (1.0f + expf(-x))); }

// ggml's ggml_gelu_f32: the tanh approximation.
inline float gelu_f32(float x) {
  constexpr float kGeluCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + kGeluCoefA * x * x)));
}

// ggml's CPU GELU (GGML_GELU_FP16, what llama.cpp's geglu runs): x rounded
// to f16 indexes a table holding f16(gelu_f32(v)) for every f16 value v;
// x <= -10 gives 0 and x >= 10 gives x. The table is made once, without
// the heap (kernels/cpu/elementwise.cpp).
const uint16_t* gelu_f16_table();
inline float gelu_f16_f32(float x, const uint16_t* table) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return f16_to_f32(table[f32_to_f16(x)]);
}

}  // namespace tessera::kernels::cpu::detail
