// variants: portable
// embedding: out[t, :] = dequantize(table[ids[t], :]) for the step's tokens.
// One invocation per output element. A weight table too large for one
// storage-buffer binding is split into vocabulary chunks, one dispatch each;
// a dispatch writes only the tokens whose id falls in its chunk. Ids outside
// the vocabulary (the host refuses them for token_ids) give zero rows.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WTYPE = WT_F32;
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 1) readonly buffer Table { uint w_words[]; };
layout(std430, set = 0, binding = 1) readonly buffer Table4 { uvec4 w_quads[]; };
layout(std430, set = 0, binding = 2) readonly buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint dim;
  uint row_bytes;
  uint vocab;        // of the whole table
  uint chunk_first;  // first vocabulary row bound in this dispatch
  uint chunk_rows;
  uint rows_kind, rows_fixed;
} pc;

#include "weights.glsl"

void main() {
  const uint t = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  const uint e = gl_GlobalInvocationID.x;
  if (t >= resolve_rows(pc.rows_kind, pc.rows_fixed) || e >= pc.dim) return;
  const int id = ids[(pc.off[1] >> 2) + t];
  const uint o = (pc.off[2] >> 2) + t * pc.dim + e;
  if (id < 0 || uint(id) >= pc.vocab) {
    if (pc.chunk_first == 0u) y[o] = 0.0;
    return;
  }
  const uint local = uint(id) - pc.chunk_first;
  if (uint(id) < pc.chunk_first || local >= pc.chunk_rows) return;
  y[o] = w_load1(pc.off[0] + local * pc.row_bytes, e);
}
