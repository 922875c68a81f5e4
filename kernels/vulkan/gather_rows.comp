// variants: portable
// gather_rows: out[r, :] = x[rows[r], :], row by 32-bit words; a row index
// outside x's rows of this step gives a zero row.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Rows { int rows[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint y[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint row_words;
  uint src_rows_kind, src_rows_fixed;
  uint rows_kind, rows_fixed;
} pc;

void main() {
  const uint n_src = resolve_rows(pc.src_rows_kind, pc.src_rows_fixed);
  const uint n = resolve_rows(pc.rows_kind, pc.rows_fixed) * pc.row_words;
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const uint r = i / pc.row_words, w = i % pc.row_words;
    const int src = rows[(pc.off[1] >> 2) + r];
    y[(pc.off[2] >> 2) + i] = (src >= 0 && uint(src) < n_src) ? x[(pc.off[0] >> 2) + uint(src) * pc.row_words + w] : 0u;
  }
}
