// Paged attention over (token, head) items. Scores go to the workspace:
// the items are cut into attention_chunks(...) contiguous chunks, chunk c
// owns the float region [c * L, (c + 1) * L) where L is the longest KV
// length in the call, and a chunk's items run one after another, so no two
// threads ever share a region. Hence attention_workspace_bytes() =
// chunks * max_context * 4, with max_context >= every sequence's KV length
// and n_threads >= the ParallelFor's num_threads().
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

namespace {

int64_t attention_chunks(int64_t items, int n_threads) {
  return std::max<int64_t>(1, std::min<int64_t>(items, 4 * (int64_t)std::max(1, n_threads)));
}

int64_t kv_len(const AttentionArgs& a, int32_t s, int64_t t) {
  return a.p.causal ? (int64_t)a.positions[t] + 1 : (int64_t)a.seq_lens[s];
}

}  // namespace

size_t attention_workspace_bytes(const AttentionParams& p, int64_t n_tokens, int64_t max_context, int n_threads) {
  const int64_t chunks = attention_chunks(n_tokens * p.n_heads, n_threads);
  return (size_t)(chunks * std::max<int64_t>(1, max_context)) * sizeof(float);
}

void paged_attention(const AttentionArgs& a, ParallelFor& pf) {
  const AttentionParams& p = a.p;
  const detail::IsaKernels& isa = detail::active_kernels();
  const int group = p.n_heads / p.n_kv_heads;
  const int hd = p.head_dim;
  const int64_t q_row = (int64_t)p.n_heads * hd;
  const int64_t kv_row = (int64_t)p.n_kv_heads * hd;
  const float sqrt_hd = sqrtf((float)hd);

  int64_t longest = 1;
  for (int32_t s = 0; s < a.n_seqs; ++s)
    for (int64_t t = a.query_start[s]; t < a.query_start[s + 1]; ++t) longest = std::max(longest, kv_len(a, s, t));

  const int64_t items = a.n_tokens * p.n_heads;
  const int64_t chunks = attention_chunks(items, pf.num_threads());
  float* const ws = static_cast<float*>(a.workspace);

  detail::parallel_for(pf, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* scores = ws + c * longest;
      for (int64_t item = c * items / chunks; item < (c + 1) * items / chunks; ++item) {
        const int64_t t = item / p.n_heads;
        const int h = (int)(item % p.n_heads);
        const int32_t s =
            (int32_t)(std::upper_bound(a.query_start, a.query_start + a.n_seqs + 1, (int32_t)t) - a.query_start) - 1;
        const int64_t len = kv_len(a, s, t);
        const int32_t* table = a.block_tables + (int64_t)s * a.max_blocks_per_seq;
        const int64_t head_off = (int64_t)(h / group) * hd;
        const float* q = a.q + t * q_row + (int64_t)h * hd;
        float* out = a.out + t * q_row + (int64_t)h * hd;

        float max = -INFINITY;
        for (int64_t j0 = 0; j0 < len; j0 += p.block_size) {
          const int64_t base = (int64_t)table[j0 / p.block_size] * p.block_size;
          const int64_t nj = std::min<int64_t>(p.block_size, len - j0);
          for (int64_t o = 0; o < nj; ++o) {
            const float dot = isa.dot(q, a.k_pool + (base + o) * kv_row + head_off, hd);
            // 1/sqrt(head_dim) is applied as llama2.c does, by division.
            const float score = p.scale != 0.0f ? dot * p.scale : dot / sqrt_hd;
            scores[j0 + o] = score;
            max = std::max(max, score);
          }
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < len; ++j) {
          scores[j] = expf(scores[j] - max);
          sum += scores[j];
        }
        std::fill(out, out + hd, 0.0f);
        for (int64_t j0 = 0; j0 < len; j0 += p.block_size) {
          const int64_t base = (int64_t)table[j0 / p.block_size] * p.block_size;
          const int64_t nj = std::min<int64_t>(p.block_size, len - j0);
          for (int64_t o = 0; o < nj; ++o)
            isa.axpy(scores[j0 + o] / sum, a.v_pool + (base + o) * kv_row + head_off, out, hd);
        }
      }
    }
  });
}

}  // namespace tessera::kernels::cpu
