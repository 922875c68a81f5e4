// variants: portable
// Paged attention for the sequences of a step with several query tokens
// (prefill chunks; attention_split serves those with one): flash-attention
// style. A workgroup takes BQ query tokens of one sequence and one head, walks
// the sequence's KV in tiles of BK positions staged in shared memory, and
// keeps a running max and sum per query row (online softmax), so scores are
// never stored for the whole context. Grouped-query heads read their KV head;
// causal masking is per query row. Head dims up to HD_MAX.
#version 450
#include "common.glsl"

#define WG 128u
#define BQ 16u
#define BK 16u
#define HD_MAX 128u
#define O_PER (BQ * HD_MAX / WG)
layout(local_size_x = 128) in;

#include "attention.glsl"
layout(std430, set = 0, binding = 1) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 2) readonly buffer KPool { uint k_pool[]; };
layout(std430, set = 0, binding = 3) readonly buffer VPool { uint v_pool[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Out { float y[]; };

shared float q_s[BQ][HD_MAX];
shared float k_s[BK][HD_MAX + 1u];
shared float v_s[BK][HD_MAX];
shared float s_s[BQ][BK + 1u];
shared float m_s[BQ], l_s[BQ], alpha_s[BQ];
shared uint len_s[BQ], first_s[BQ];
shared int slot_s[BK];

void main() {
  const uint s = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
  if (s >= step_params.n_seqs) return;
  const uint q_begin = uint(query_start[(pc.off[4] >> 2) + s]), q_end = uint(query_start[(pc.off[4] >> 2) + s + 1u]);
  if (q_end - q_begin == 1u) return;  // a decode token: attention_split's
  const uint t0 = q_begin + gl_WorkGroupID.x * BQ;
  if (t0 >= q_end || t0 >= step_params.n_tokens) return;
  const uint nq = min(BQ, min(q_end, step_params.n_tokens) - t0);
  const uint lid = gl_LocalInvocationIndex;
  const uint hd = min(pc.head_dim, HD_MAX);
  const uint kvh = h / (pc.n_heads / pc.n_kv_heads);
  const uint kv_row = pc.n_kv_heads * pc.head_dim;
  const uint ko = kv_base(pc.off[1]) + kvh * pc.head_dim, vo = kv_base(pc.off[2]) + kvh * pc.head_dim;
  const uint q_row = pc.n_heads * pc.head_dim;

  for (uint i = lid; i < BQ * hd; i += WG) {
    const uint r = i / hd, d = i % hd;
    q_s[r][d] = r < nq ? q[(pc.off[0] >> 2) + (t0 + r) * q_row + h * pc.head_dim + d] : 0.0;
  }
  if (lid < BQ) {
    len_s[lid] = lid < nq ? context_of(t0 + lid, s) : 0u;
    first_s[lid] = lid < nq ? first_of(t0 + lid) : 0u;
    m_s[lid] = NEG_BIG;
    l_s[lid] = 0.0;
  }
  float o[O_PER];
  [[unroll]] for (uint i = 0u; i < O_PER; ++i) o[i] = 0.0;
  barrier();
  uint kv_end = 0u;
  for (uint r = 0u; r < BQ; ++r) kv_end = max(kv_end, len_s[r]);

  for (uint kv0 = 0u; kv0 < kv_end; kv0 += BK) {
    if (lid < BK) slot_s[lid] = kv0 + lid < kv_end ? slot_of(s, kv0 + lid) : -1;
    barrier();
    for (uint i = lid; i < BK * hd; i += WG) {
      const uint jj = i / hd, d = i % hd;
      const int slot = slot_s[jj];
      k_s[jj][d] = slot >= 0 ? KV_LOAD(k_pool, ko + uint(slot) * kv_row + d) : 0.0;
      v_s[jj][d] = slot >= 0 ? KV_LOAD(v_pool, vo + uint(slot) * kv_row + d) : 0.0;
    }
    barrier();
    for (uint i = lid; i < BQ * BK; i += WG) {
      const uint r = i / BK, jj = i % BK;
      float score = NEG_BIG;
      if (kv0 + jj < len_s[r] && kv0 + jj >= first_s[r] && slot_s[jj] >= 0) {
        float dot = 0.0;
        for (uint d = 0u; d < hd; ++d) dot += q_s[r][d] * k_s[jj][d];
        score = score_of(dot);
      }
      s_s[r][jj] = score;
    }
    barrier();
    // Online softmax, one invocation per query row: rescale what came before.
    if (lid < BQ) {
      const uint r = lid;
      float mx = m_s[r];
      for (uint jj = 0u; jj < BK; ++jj) mx = max(mx, s_s[r][jj]);
      const float alpha = exp(m_s[r] - mx);  // 0 when nothing came before, 1 when still nothing
      float sum = 0.0;
      for (uint jj = 0u; jj < BK; ++jj) {
        const float p = s_s[r][jj] > 0.5 * NEG_BIG ? exp(s_s[r][jj] - mx) : 0.0;
        s_s[r][jj] = p;
        sum += p;
      }
      l_s[r] = l_s[r] * alpha + sum;
      m_s[r] = mx;
      alpha_s[r] = alpha;
    }
    barrier();
    [[unroll]] for (uint i = 0u; i < O_PER; ++i) {
      const uint idx = lid + i * WG;
      const uint r = idx / hd, d = idx % hd;
      if (r >= BQ) break;
      float acc = o[i] * alpha_s[r];
      for (uint jj = 0u; jj < BK; ++jj) acc += s_s[r][jj] * v_s[jj][d];
      o[i] = acc;
    }
    barrier();
  }

  [[unroll]] for (uint i = 0u; i < O_PER; ++i) {
    const uint idx = lid + i * WG;
    const uint r = idx / hd, d = idx % hd;
    if (r >= nq) break;
    y[(pc.off[7] >> 2) + (t0 + r) * q_row + h * pc.head_dim + d] = l_s[r] > 0.0 ? o[i] / l_s[r] : 0.0;
  }
}
