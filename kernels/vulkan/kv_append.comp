// variants: portable
// kv_append: k_pool[slot_mapping[t]] = k[t], v_pool[...] = v[t]. A slot
// outside the pool (the host refuses them) is skipped.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer Slots { int slots[]; };
layout(std430, set = 0, binding = 4) writeonly buffer KPool { float k_pool[]; };
layout(std430, set = 0, binding = 5) writeonly buffer VPool { float v_pool[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint row;  // n_kv_heads * head_dim
  uint num_slots;
  uint rows_kind, rows_fixed;
} pc;

void main() {
  const uint n = resolve_rows(pc.rows_kind, pc.rows_fixed) * pc.row;
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const uint t = i / pc.row, e = i % pc.row;
    const int slot = slots[(pc.off[2] >> 2) + t];
    if (slot < 0 || uint(slot) >= pc.num_slots) continue;
    k_pool[(pc.off[3] >> 2) + uint(slot) * pc.row + e] = k[(pc.off[0] >> 2) + i];
    v_pool[(pc.off[4] >> 2) + uint(slot) * pc.row + e] = v[(pc.off[1] >> 2) + i];
  }
}
