// variants: portable subgroup
// Paged attention for decode tokens, split over the context: a workgroup takes
// one (row, head, partition of SPLIT positions), computes the partition's
// max score, sum of exponentials and unnormalized weighted sum of V, and
// writes them for attention_merge. Long contexts thus use many workgroups.
// A row is a sequence with one query token, or any token when
// pc.split_all_tokens (attention.glsl split_row).
#version 450
#include "common.glsl"

#define WG 64u
#define SPLIT 128u
#define HD_MAX 256u
layout(local_size_x = 64) in;

#include "attention.glsl"
layout(std430, set = 0, binding = 1) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 2) readonly buffer KPool { uint k_pool[]; };
layout(std430, set = 0, binding = 3) readonly buffer VPool { uint v_pool[]; };
// Per (row, head, partition): max, sum, then head_dim accumulators.
layout(std430, set = 0, binding = 8) writeonly buffer Partials { float partials[]; };

#include "reduce.glsl"

shared float q_s[HD_MAX];
shared float p_s[SPLIT];
shared int slot_s[SPLIT];

void main() {
  const uint row = gl_WorkGroupID.z, h = gl_WorkGroupID.y, part = gl_WorkGroupID.x;
  uint t, s;
  if (!split_row(row, t, s)) return;
  const uint len = context_of(t, s);
  const uint j0 = part * SPLIT;
  if (j0 >= len) return;
  const uint j1 = min(j0 + SPLIT, len);
  const uint first = first_of(t);  // positions before it are masked like a missing block
  const uint lid = gl_LocalInvocationIndex;
  const uint hd = min(pc.head_dim, HD_MAX);
  const uint kvh = h / (pc.n_heads / pc.n_kv_heads);
  const uint kv_row = pc.n_kv_heads * pc.head_dim;
  const uint ko = kv_base(pc.off[1]), vo = kv_base(pc.off[2]);

  const uint qo = (pc.off[0] >> 2) + (t * pc.n_heads + h) * pc.head_dim;
  for (uint d = lid; d < hd; d += WG) q_s[d] = q[qo + d];
  barrier();

  float m = NEG_BIG;
  for (uint j = j0 + lid; j < j1; j += WG) {
    const int slot = j >= first ? slot_of(s, j) : -1;
    float score = NEG_BIG;
    if (slot >= 0) {
      const uint kb = ko + uint(slot) * kv_row + kvh * pc.head_dim;
      float dot = 0.0;
      for (uint d = 0u; d < hd; ++d) dot += q_s[d] * KV_LOAD(k_pool, kb + d);
      score = score_of(dot);
    }
    slot_s[j - j0] = slot;
    p_s[j - j0] = score;
    m = max(m, score);
  }
  m = wg_max(m);
  float l = 0.0;
  for (uint j = j0 + lid; j < j1; j += WG) {
    const float p = slot_s[j - j0] >= 0 ? exp(p_s[j - j0] - m) : 0.0;
    p_s[j - j0] = p;
    l += p;
  }
  l = wg_sum(l);  // its barriers also publish p_s

  const uint po = (pc.off[7] >> 2) + ((row * pc.n_heads + h) * pc.n_splits + part) * (pc.head_dim + 2u);
  for (uint d = lid; d < hd; d += WG) {
    float acc = 0.0;
    for (uint j = j0; j < j1; ++j) {
      const int slot = slot_s[j - j0];
      if (slot >= 0) acc += p_s[j - j0] * KV_LOAD(v_pool, vo + uint(slot) * kv_row + kvh * pc.head_dim + d);
    }
    partials[po + 2u + d] = acc;
  }
  if (lid == 0u) {
    partials[po] = m;
    partials[po + 1u] = l;
  }
}
