// variants: portable
// rope: rotates the first rot_dims of every head by position * theta^(-2i/rot_dims)
// (divided by pair i's frequency factor where there are factors, llama3's
// rope_freqs, then times freq_scale: llama.cpp's order, kernels/rope_math.h),
// pairs (2i, 2i+1) (interleaved) or (i, i + rot_dims/2) (half_split). cos and
// sin come from a table the host computed with the reference formula (bit for
// bit what the CPU computes); a position past the table is computed here.
// One invocation per pair; out may alias x, and the dims past rot_dims are
// copied when it does not.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Pos { int positions[]; };
layout(std430, set = 0, binding = 3) buffer Out { float y[]; };
layout(std430, set = 0, binding = 4) readonly buffer Table { vec2 cos_sin[]; };
layout(std430, set = 0, binding = 5) readonly buffer Factors { float factors[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint n_heads, head_dim, rot_dims;
  float theta;
  uint half_split;
  uint table_positions;  // rows of the table: positions 0 .. table_positions-1
  uint copy_tail;        // out is not x: copy dims rot_dims .. head_dim
  uint rows_kind, rows_fixed;
  float freq_scale;      // 1: none
  uint has_factors;      // binding 5 holds rot_dims/2 frequency factors
} pc;

void main() {
  const uint half_rot = pc.rot_dims / 2u;
  const uint tail_pairs = (pc.head_dim - pc.rot_dims + 1u) / 2u;
  const uint per_head = half_rot + tail_pairs;
  const uint n = resolve_rows(pc.rows_kind, pc.rows_fixed) * pc.n_heads * per_head;
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint g = gl_GlobalInvocationID.x; g < n; g += stride) {
    const uint th = g / per_head, i = g % per_head;  // th = token * n_heads + head
    const uint t = th / pc.n_heads;
    const uint base_x = (pc.off[0] >> 2) + th * pc.head_dim, base_y = (pc.off[2] >> 2) + th * pc.head_dim;
    if (i >= half_rot) {
      if (pc.copy_tail == 0u) continue;
      const uint e = pc.rot_dims + 2u * (i - half_rot);
      y[base_y + e] = x[base_x + e];
      if (e + 1u < pc.head_dim) y[base_y + e + 1u] = x[base_x + e + 1u];
      continue;
    }
    const int pos = positions[(pc.off[1] >> 2) + t];
    vec2 cs;
    if (pos >= 0 && uint(pos) < pc.table_positions) {
      cs = cos_sin[(pc.off[3] >> 3) + uint(pos) * half_rot + i];
    } else {
      const float freq = 1.0 / pow(pc.theta, float(2u * i) / float(pc.rot_dims));
      precise float val = float(pos) * freq;
      if (pc.has_factors != 0u) val /= factors[(pc.off[4] >> 2) + i];
      val *= pc.freq_scale;
      cs = vec2(cos(val), sin(val));
    }
    const uint e0 = pc.half_split != 0u ? i : 2u * i;
    const uint e1 = pc.half_split != 0u ? i + half_rot : 2u * i + 1u;
    const float v0 = x[base_x + e0], v1 = x[base_x + e1];
    precise float r0 = v0 * cs.x - v1 * cs.y;
    precise float r1 = v0 * cs.y + v1 * cs.x;
    y[base_y + e0] = r0;
    y[base_y + e1] = r1;
  }
}
