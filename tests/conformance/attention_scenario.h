#pragma once
// One paged-attention call's random inputs (shuffled block tables, several
// sequences, prefill and decode rows), shared by the attention suites.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "conformance.h"

namespace tessera::testing {

struct Seq {
  int32_t kv_len;  // tokens of this sequence in the cache
  int32_t q_len;   // query tokens in this call: the last q_len positions
};

// One call's worth of metadata and pools, with every slot the call must not
// read filled with random data too, and unused block-table entries set to -1.
struct Scenario {
  AttentionParams p;
  std::vector<Seq> seqs;
  int32_t max_blocks_per_seq = 0;
  int64_t n_tokens = 0;
  std::vector<int32_t> positions, query_start, seq_lens, block_tables;
  std::vector<float> q, k_pool, v_pool;

  Scenario(AttentionParams params, std::vector<Seq> s, Rng& rng) : p(params), seqs(std::move(s)) {
    int32_t total_blocks = 0;
    for (const Seq& sq : seqs) {
      const int32_t blocks = (sq.kv_len + p.block_size - 1) / p.block_size;
      max_blocks_per_seq = std::max(max_blocks_per_seq, blocks);
      total_blocks += blocks;
    }
    max_blocks_per_seq += 1;  // a spare, never-used entry per row
    const int32_t pool_blocks = total_blocks + 5;
    std::vector<int32_t> ids((size_t)pool_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng.engine());
    size_t next_id = 0;
    block_tables.assign(seqs.size() * (size_t)max_blocks_per_seq, -1);
    query_start.push_back(0);
    for (size_t s = 0; s < seqs.size(); ++s) {
      const int32_t blocks = (seqs[s].kv_len + p.block_size - 1) / p.block_size;
      for (int32_t b = 0; b < blocks; ++b) block_tables[s * (size_t)max_blocks_per_seq + (size_t)b] = ids[next_id++];
      for (int32_t i = 0; i < seqs[s].q_len; ++i) positions.push_back(seqs[s].kv_len - seqs[s].q_len + i);
      query_start.push_back(query_start.back() + seqs[s].q_len);
      seq_lens.push_back(seqs[s].kv_len);
    }
    n_tokens = query_start.back();
    const int64_t kv_row = (int64_t)p.n_kv_heads * p.head_dim;
    q = rng.floats((size_t)(n_tokens * p.n_heads * p.head_dim), -2.0f, 2.0f);
    k_pool = rng.floats((size_t)(pool_blocks * p.block_size * kv_row), -2.0f, 2.0f);
    v_pool = rng.floats(k_pool.size());
  }

  AttentionArgs args(float* out, void* workspace) const {
    AttentionArgs a;
    a.q = q.data();
    a.out = out;
    a.n_tokens = n_tokens;
    a.k_pool = k_pool.data();
    a.v_pool = v_pool.data();
    a.positions = positions.data();
    a.query_start = query_start.data();
    a.seq_lens = seq_lens.data();
    a.block_tables = block_tables.data();
    a.n_seqs = (int32_t)seqs.size();
    a.max_blocks_per_seq = max_blocks_per_seq;
    a.p = p;
    a.workspace = workspace;
    return a;
  }
};

// f32 scores, softmax and weighted sum against the f64 reference.
inline constexpr double kAttentionBound = 1e-5;

// The context length the workspace is sized for: the table's reach.
inline int64_t max_context(const Scenario& sc) { return (int64_t)sc.max_blocks_per_seq * sc.p.block_size; }

// Attention over pools of type t (r.k, r.v: their bytes; r.k_f32, r.v_f32:
// the values they hold, widened) on every ISA: within kAttentionBound of the
// reference over the same pools, and bit for bit the CPU's result over the
// f32 pools, since every stored element widens to f32 exactly.
template <class Pools>
void check_pools_as_f32(const Scenario& sc, DType t, const Pools& r) {
  const size_t out_size = (size_t)(sc.n_tokens * sc.p.n_heads * sc.p.head_dim);
  std::vector<float> want(out_size);
  AttentionArgs ra = sc.args(want.data(), nullptr);
  ra.k_pool = r.k.data();
  ra.v_pool = r.v.data();
  ra.kv_dtype = t;
  ref::paged_attention(ra);
  for_each_isa([&](cpu::Isa) {
    AlignedBuffer ws(cpu::attention_workspace_bytes(sc.p, {sc.n_tokens, (int64_t)sc.seqs.size(), max_context(sc), pool().num_threads()}));
    std::vector<float> got(out_size, -777.0f), as_f32(out_size, -777.0f);
    AttentionArgs a = ra;
    a.out = got.data();
    a.workspace = ws.data();
    cpu::paged_attention(a, pool());
    AttentionArgs f = sc.args(as_f32.data(), ws.data());
    f.k_pool = r.k_f32.data();
    f.v_pool = r.v_f32.data();
    cpu::paged_attention(f, pool());
    CHECK(std::memcmp(got.data(), as_f32.data(), out_size * sizeof(float)) == 0);
    const double err = rel_error(got, want);
    CHECK_MESSAGE(err <= kAttentionBound, "relative error " << err);
  });
}

}  // namespace tessera::testing
