#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kv_element.h"
#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

// Scores, max-subtracted softmax and the weighted sum of V, all in f64,
// reading K/V (f32, f16, bf16, or q8_0 / fp8_e4m3 dequantized: all exact
// in f32, kv_element.h) through the block table one position at a time.
void paged_attention(const AttentionArgs& a) {
  const AttentionParams& p = a.p;
  const int group = p.n_heads / p.n_kv_heads;
  const int64_t q_row = (int64_t)p.n_heads * p.head_dim;
  const int64_t kv_row = (int64_t)p.n_kv_heads * p.head_dim;
  const double scale = p.scale != 0.0f ? p.scale : 1.0f / sqrtf((float)p.head_dim);
  std::vector<double> scores, acc((size_t)p.head_dim);
  for (int32_t s = 0; s < a.n_seqs; ++s) {
    const int32_t* table = a.block_tables + (int64_t)s * a.max_blocks_per_seq;
    auto slot = [&](int64_t j) { return (int64_t)table[j / p.block_size] * p.block_size + j % p.block_size; };
    for (int64_t t = a.query_start[s]; t < a.query_start[s + 1]; ++t) {
      const int64_t len = p.causal ? (int64_t)a.positions[t] + 1 : (int64_t)a.seq_lens[s];
      // The sliding window: positions j with positions[t] - j < window.
      const int64_t first = p.window > 0 ? std::max<int64_t>(0, (int64_t)a.positions[t] - p.window + 1) : 0;
      scores.assign((size_t)len, 0.0);
      for (int h = 0; h < p.n_heads; ++h) {
        const int kvh = h / group;
        const float* q = a.q + t * q_row + (int64_t)h * p.head_dim;
        double max = -INFINITY;
        for (int64_t j = first; j < len; ++j) {
          const int64_t k = slot(j) * kv_row + (int64_t)kvh * p.head_dim;
          double dot = 0.0;
          for (int d = 0; d < p.head_dim; ++d) dot += (double)q[d] * load_kv(a.k_pool, a.kv_dtype, k + d);
          scores[(size_t)j] = dot * scale;
          if (p.softcap > 0.0f) scores[(size_t)j] = (double)p.softcap * std::tanh(scores[(size_t)j] / (double)p.softcap);
          if (scores[(size_t)j] > max) max = scores[(size_t)j];
        }
        double sum = 0.0;
        for (int64_t j = first; j < len; ++j) {
          scores[(size_t)j] = std::exp(scores[(size_t)j] - max);
          sum += scores[(size_t)j];
        }
        acc.assign((size_t)p.head_dim, 0.0);
        for (int64_t j = first; j < len; ++j) {
          const int64_t v = slot(j) * kv_row + (int64_t)kvh * p.head_dim;
          const double w = scores[(size_t)j] / sum;
          for (int d = 0; d < p.head_dim; ++d) acc[(size_t)d] += w * load_kv(a.v_pool, a.kv_dtype, v + d);
        }
        float* out = a.out + t * q_row + (int64_t)h * p.head_dim;
        for (int d = 0; d < p.head_dim; ++d) out[d] = (float)acc[(size_t)d];
      }
    }
  }
}

}  // namespace tessera::kernels::reference
