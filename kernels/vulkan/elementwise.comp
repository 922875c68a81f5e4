// variants: portable
// add (OP 0): out = a + b; silu_mul (OP 1): out = silu(a) * b with llama2.c's
// formula. Over rows * cols elements, grid-stride; out may alias a or b.
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
} pc;

void main() {
  const uint n = resolve_rows(pc.rows_kind, pc.rows_fixed) * pc.cols;
  const uint ao = pc.off[0] >> 2, bo = pc.off[1] >> 2, yo = pc.off[2] >> 2;
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const float g = a[ao + i];
    if (OP == 0u) y[yo + i] = g + b[bo + i];
    else y[yo + i] = g * (1.0 / (1.0 + exp(-g))) * b[bo + i];
  }
}
