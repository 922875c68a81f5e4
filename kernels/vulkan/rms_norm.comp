// variants: portable subgroup
// rms_norm: out = weight * (x / sqrt(mean(x^2) + eps)), one workgroup per row,
// in llama2.c's order of operations. out may alias x. head_rms_norm is the
// same over `heads` rows of dim values per tensor row, one weight for all.
#version 450
#include "common.glsl"

#define WG 128u
layout(local_size_x = 128) in;

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Wt { float w[]; };
layout(std430, set = 0, binding = 3) buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint dim;
  float eps;
  uint rows_kind, rows_fixed;
  uint heads;  // rows of dim per tensor row: 1, or head_rms_norm's heads
} pc;

#include "reduce.glsl"

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= resolve_rows(pc.rows_kind, pc.rows_fixed) * pc.heads) return;
  const uint lid = gl_LocalInvocationIndex;
  const uint xo = (pc.off[0] >> 2) + row * pc.dim, wo = pc.off[1] >> 2, yo = (pc.off[2] >> 2) + row * pc.dim;
  float ss = 0.0;
  for (uint j = lid; j < pc.dim; j += WG) ss += x[xo + j] * x[xo + j];
  ss = wg_sum(ss);
  const float inv = 1.0 / sqrt(ss / float(pc.dim) + pc.eps);
  // Every read of x above is done before any invocation overwrites it (in place).
  barrier();
  for (uint j = lid; j < pc.dim; j += WG) y[yo + j] = w[wo + j] * (inv * x[xo + j]);
}
