// variants: portable subgroup
// softmax over each row, max-subtracted; one workgroup per row. out may alias x.
#version 450
#include "common.glsl"

#define WG 128u
layout(local_size_x = 128) in;

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint cols;
  uint rows_kind, rows_fixed;
} pc;

#include "reduce.glsl"

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= resolve_rows(pc.rows_kind, pc.rows_fixed)) return;
  const uint lid = gl_LocalInvocationIndex;
  const uint xo = (pc.off[0] >> 2) + row * pc.cols, yo = (pc.off[1] >> 2) + row * pc.cols;
  float m = -3.402823466e38;
  for (uint j = lid; j < pc.cols; j += WG) m = max(m, x[xo + j]);
  m = wg_max(m);
  float s = 0.0;
  for (uint j = lid; j < pc.cols; j += WG) s += exp(x[xo + j] - m);
  s = wg_sum(s);
  barrier();
  for (uint j = lid; j < pc.cols; j += WG) y[yo + j] = exp(x[xo + j] - m) / s;
}
