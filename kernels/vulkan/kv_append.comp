// variants: portable
// kv_append: k_pool[slot_mapping[t]] = k[t], v_pool[...] = v[t], stored as
// the pools' type (kv_pool.glsl): f32 one element per invocation; f16 and
// bf16 two per invocation, one pool word (the host refuses an odd row);
// q8_0 and fp8_e4m3 one 32-element block per invocation (its amax, scale
// and 34 bytes; blocks share words, so the bytes go in atomically). A slot
// outside the pool (the host refuses them) is skipped.
#version 450
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer Slots { int slots[]; };
layout(std430, set = 0, binding = 4) buffer KPool { uint k_pool[]; };
layout(std430, set = 0, binding = 5) buffer VPool { uint v_pool[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint row;  // n_kv_heads * head_dim
  uint num_slots;
  uint rows_kind, rows_fixed;
  uint kv_type;
} pc;

#include "kv_pool.glsl"

// The 8-bit types: invocation i quantizes block i % blocks of token i / blocks.
void append_blocks() {
  const uint blocks = pc.row / 32u;
  const uint n = resolve_rows(pc.rows_kind, pc.rows_fixed) * blocks;
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const uint t = i / blocks, b = i % blocks;
    const int slot = slots[(pc.off[2] >> 2) + t];
    if (slot < 0 || uint(slot) >= pc.num_slots) continue;
    const uint ks = (pc.off[0] >> 2) + t * pc.row + b * 32u, vs = (pc.off[1] >> 2) + t * pc.row + b * 32u;
    const uint dst = (uint(slot) * blocks + b) * 34u;
    float x[32];
    uint bytes[34];
    for (uint j = 0u; j < 32u; ++j) x[j] = k[ks + j];
    kv_quantize_block(x, bytes);
    for (uint j = 0u; j < 34u; ++j) KV_PUT_BYTE(k_pool, pc.off[3] + dst + j, bytes[j]);
    for (uint j = 0u; j < 32u; ++j) x[j] = v[vs + j];
    kv_quantize_block(x, bytes);
    for (uint j = 0u; j < 34u; ++j) KV_PUT_BYTE(v_pool, pc.off[4] + dst + j, bytes[j]);
  }
}

void main() {
  if (kv_blocks()) {
    append_blocks();
    return;
  }
  const uint per_word = pc.kv_type == KV_F32 ? 1u : 2u;
  const uint words = pc.row / per_word;  // pool words per row
  const uint n = resolve_rows(pc.rows_kind, pc.rows_fixed) * words;
  const uint stride = gl_NumWorkGroups.x * 256u;
  const uint kw = pc.off[3] >> 2, vw = pc.off[4] >> 2;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const uint t = i / words, w = i % words;
    const int slot = slots[(pc.off[2] >> 2) + t];
    if (slot < 0 || uint(slot) >= pc.num_slots) continue;
    const uint src = t * pc.row + w * per_word;
    const uint ks = (pc.off[0] >> 2) + src, vs = (pc.off[1] >> 2) + src;
    const uint dst = uint(slot) * words + w;
    if (per_word == 1u) {
      k_pool[kw + dst] = floatBitsToUint(k[ks]);
      v_pool[vw + dst] = floatBitsToUint(v[vs]);
    } else {
      k_pool[kw + dst] = kv_pack2(k[ks], k[ks + 1u]);
      v_pool[vw + dst] = kv_pack2(v[vs], v[vs + 1u]);
    }
  }
}
