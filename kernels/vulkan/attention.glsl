// Paged attention: shared bindings, push constants and the KV addressing of
// the attention kernels. KV position j of sequence s lives at slot
//   block_tables[s * max_blocks + j / block_size] * block_size + j % block_size
// of pools [num_slots, n_kv_heads * head_dim]. Token t of sequence s attends
// to positions [0, positions[t]] when causal, else [0, seq_lens[s]); with a
// sliding window only to those j with positions[t] - j < window
// (first_of), and with a soft-cap its scores become cap * tanh(s / cap).
// The host checks the metadata before a step runs; the kernels still clamp
// every index so that bad metadata cannot address outside a binding.
// Bindings 4..7 are the metadata; each kernel declares its tensors at 1..3 and
// 8, the pools as words of f32, f16 or bf16 (kv_pool.glsl).

layout(std430, set = 0, binding = 4) readonly buffer Pos { int positions[]; };
layout(std430, set = 0, binding = 5) readonly buffer QStart { int query_start[]; };
layout(std430, set = 0, binding = 6) readonly buffer SeqLens { int seq_lens[]; };
layout(std430, set = 0, binding = 7) readonly buffer Tables { int block_tables[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint n_heads, n_kv_heads, head_dim, block_size;
  float scale;
  uint causal;
  uint max_blocks;  // block table row length
  uint num_slots;   // of the smaller pool
  uint n_splits;    // decode: KV partitions per (row, head)
  // decode: 1 when the split kernels serve every token (row = token), 0 when
  // they serve only the sequences with one query token (row = the row-th such
  // sequence) and attention_prefill serves the others.
  uint split_all_tokens;
  uint window;    // 0: none (core/ops.h AttentionParams::window)
  float softcap;  // 0: none
  uint kv_type;   // the pools' type (kv_pool.glsl)
} pc;

#include "kv_pool.glsl"

const float NEG_BIG = -3.0e38;

// The sequence token t belongs to (query_start ascending, checked by the host).
uint seq_of(uint t) {
  const uint n = step_params.n_seqs;
  for (uint s = 0u; s < n; ++s)
    if (int(t) < query_start[(pc.off[4] >> 2) + s + 1u]) return s;
  return n > 0u ? n - 1u : 0u;
}

uint query_len(uint s) {
  return uint(max(query_start[(pc.off[4] >> 2) + s + 1u] - query_start[(pc.off[4] >> 2) + s], 0));
}

// The token and sequence of row `row` of the split kernels' partials, or
// false when this step has no such row (see pc.split_all_tokens).
bool split_row(uint row, out uint t, out uint s) {
  if (pc.split_all_tokens != 0u) {
    t = row;
    s = t < step_params.n_tokens ? seq_of(t) : 0u;
    return t < step_params.n_tokens;
  }
  uint seen = 0u;
  for (s = 0u; s < step_params.n_seqs; ++s) {
    if (query_len(s) != 1u) continue;
    if (seen == row) {
      t = uint(query_start[(pc.off[4] >> 2) + s]);
      return t < step_params.n_tokens;
    }
    ++seen;
  }
  t = 0u;
  return false;
}

// How many KV positions token t of sequence s attends to, within the table.
uint context_of(uint t, uint s) {
  const int len = pc.causal != 0u ? positions[(pc.off[3] >> 2) + t] + 1 : seq_lens[(pc.off[5] >> 2) + s];
  return uint(clamp(len, 0, int(pc.max_blocks * pc.block_size)));
}

// The first KV position token t attends to: the start of its window.
uint first_of(uint t) {
  if (pc.window == 0u) return 0u;
  const int p = positions[(pc.off[3] >> 2) + t];
  return uint(max(p - int(pc.window) + 1, 0));
}

// The score of a dot product: scaled, then soft-capped when asked, as ggml computes it.
float score_of(float dot) {
  const float s = dot * pc.scale;
  return pc.softcap > 0.0 ? pc.softcap * tanh(clamp(s * (1.0 / pc.softcap), -15.0, 15.0)) : s;
}

// The pool slot of position j of sequence s, or -1 when its block is not in the pool.
int slot_of(uint s, uint j) {
  const int blk = block_tables[(pc.off[6] >> 2) + s * pc.max_blocks + j / pc.block_size];
  const int slot = blk * int(pc.block_size) + int(j % pc.block_size);
  return (blk < 0 || uint(slot) >= pc.num_slots) ? -1 : slot;
}
