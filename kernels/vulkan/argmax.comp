// variants: portable subgroup
// argmax of each row (the first index of the maximum), one workgroup per row.
#version 450
#include "common.glsl"

#define WG 128u
layout(local_size_x = 128) in;

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { int y[]; };

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
  const uint xo = (pc.off[0] >> 2) + row * pc.cols;
  float best = -3.402823466e38;
  uint best_i = 0xFFFFFFFFu;
  for (uint j = lid; j < pc.cols; j += WG)
    if (best_i == 0xFFFFFFFFu || x[xo + j] > best) {
      best = x[xo + j];
      best_i = j;
    }
  const uint i = wg_argmax(best, best_i);
  if (lid == 0u) y[(pc.off[1] >> 2) + row] = int(i == 0xFFFFFFFFu ? 0u : i);
}
