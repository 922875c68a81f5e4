// variants: portable
// Over rows * cols elements, grid-stride; out may alias a or b.
//   add (OP 0): out = a + b
//   silu_mul (OP 1): out = silu(a) * b with llama2.c's formula
//   gelu_mul (OP 2): out = gelu(a) * b as ggml's CPU computes it: a rounded
//     to f16, its tanh GELU in f32 rounded to f16 (ggml's table entry);
//     a <= -10 gives 0, a >= 10 gives a
//   scale (OP 3): out = a * s (b unused)
//   softcap (OP 4): out = s * tanh(a / s) (b unused)
//   mul (OP 5): out = a * b
//   silu (OP 6): out = silu(a) with llama2.c's formula, as silu_mul's (b unused)
//   gelu (OP 7): out = ggml's tanh GELU of a, in f32 (b unused)
//   bias_add (OP 8): out = a + b[i % cols], b one row repeated over the rows
// The formulas are the CPU's (kernels/cpu/ew_math.h); exp and tanh are the
// device's, so silu and gelu agree with the CPU's to rounding, not to the bit.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 1) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint cols;
  uint rows_kind, rows_fixed;
  float s;
} pc;

float f16_round(float x) { return unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x; }

// tanh of an argument past +-15 is +-1 in f32; clamped, so that no
// implementation's (e^2x - 1) / (e^2x + 1) overflows to NaN.
float gelu_f32(float x) {
  const float u = 0.79788456080286535587989211986876 * x * (1.0 + 0.044715 * x * x);
  return 0.5 * x * (1.0 + tanh(clamp(u, -15.0, 15.0)));
}

float gelu_f16(float x) {
  if (x <= -10.0) return 0.0;
  if (x >= 10.0) return x;
  const float v = f16_round(x);
  const float g = 0.5 * v * (1.0 + tanh(0.79788456080286535587989211986876 * v * (1.0 + 0.044715 * v * v)));
  return f16_round(g);
}

void main() {
  const uint n = resolve_rows(pc.rows_kind, pc.rows_fixed) * pc.cols;
  const uint ao = pc.off[0] >> 2, bo = pc.off[1] >> 2, yo = pc.off[2] >> 2;
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const float g = a[ao + i];
    if (OP == 0u) y[yo + i] = g + b[bo + i];
    else if (OP == 1u) y[yo + i] = g * (1.0 / (1.0 + exp(-g))) * b[bo + i];
    else if (OP == 2u) y[yo + i] = gelu_f16(g) * b[bo + i];
    else if (OP == 3u) y[yo + i] = g * pc.s;
    else if (OP == 4u) y[yo + i] = pc.s * tanh(clamp(g * (1.0 / pc.s), -15.0, 15.0));
    else if (OP == 5u) y[yo + i] = g * b[bo + i];
    else if (OP == 6u) y[yo + i] = g * (1.0 / (1.0 + exp(-g)));
    else if (OP == 7u) y[yo + i] = gelu_f32(g);
    else y[yo + i] = g + b[bo + i % pc.cols];
  }
}
