#include "engine/runtime/llama_graph.h"

#include <cmath>
#include <string>

#include "graph/builder.h"

namespace tessera {

using graph::GraphBuilder;
using graph::ValueId;

Expected<graph::Graph> build_llama_graph(const ModelWeights& w, const KvLayout& kv, const LlamaGraphOptions& o) {
  const LlamaConfig& c = w.config;
  TS_TRY(c.validate(w.source));
  const int64_t dim = c.dim, hd = c.head_dim(), q_dim = (int64_t)c.n_heads * hd, kv_dim = c.kv_dim();
  GraphBuilder b("llama");
  Status missing;
  auto weight = [&](const std::string& name, Shape shape) -> ValueId {
    auto t = w.require(name, shape);
    if (!t) {
      if (missing.is_ok()) missing = t.status();
      return graph::kNoValue;
    }
    return b.weight(name, (*t)->desc);
  };

  const ValueId ids = b.step_input(StepField::token_ids, RowCount::tokens);
  const ValueId positions = b.step_input(StepField::positions, RowCount::tokens);
  const ValueId slots = b.step_input(StepField::slot_mapping, RowCount::tokens);
  const ValueId query_start = b.step_input(StepField::query_start, RowCount::fixed);
  const ValueId seq_lens = b.step_input(StepField::seq_lens, RowCount::fixed);
  const ValueId block_tables = b.step_input(StepField::block_tables, RowCount::fixed);
  const ValueId logit_rows = b.step_input(StepField::logit_rows, RowCount::logit_rows);

  const ValueId embd = weight("token_embd.weight", Shape{c.vocab_size, dim});
  if (!missing.is_ok()) return missing;
  ValueId x = b.embedding(embd, ids, "token_embd");

  const RmsNormParams norm{c.rms_eps};
  const RopeParams rope_q{c.n_heads, (int32_t)hd, c.rope_dims ? c.rope_dims : (int32_t)hd, c.rope_theta, c.rope_layout};
  RopeParams rope_k = rope_q;
  rope_k.n_heads = c.n_kv_heads;
  const KvCacheParams kvp{c.n_kv_heads, (int32_t)hd, kv.block_size};
  const AttentionParams attn{c.n_heads, c.n_kv_heads, (int32_t)hd, kv.block_size, 1.0f / std::sqrt((float)hd), true};
  const TensorDesc pool_desc = TensorDesc::contiguous(DType::f32, Shape{kv.num_slots(), kv_dim});

  for (int32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const ValueId attn_norm = weight(p + "attn_norm.weight", Shape{dim});
    const ValueId wq = weight(p + "attn_q.weight", Shape{q_dim, dim});
    const ValueId wk = weight(p + "attn_k.weight", Shape{kv_dim, dim});
    const ValueId wv = weight(p + "attn_v.weight", Shape{kv_dim, dim});
    const ValueId wo = weight(p + "attn_output.weight", Shape{dim, q_dim});
    const ValueId ffn_norm = weight(p + "ffn_norm.weight", Shape{dim});
    const ValueId w_gate = weight(p + "ffn_gate.weight", Shape{c.hidden_dim, dim});
    const ValueId w_up = weight(p + "ffn_up.weight", Shape{c.hidden_dim, dim});
    const ValueId w_down = weight(p + "ffn_down.weight", Shape{dim, c.hidden_dim});
    if (!missing.is_ok()) return missing;
    const ValueId k_pool = b.kv_pool(p + "k_cache", pool_desc);
    const ValueId v_pool = b.kv_pool(p + "v_cache", pool_desc);

    const ValueId h = b.rms_norm(x, attn_norm, norm, p + "attn_norm");
    ValueId q = b.matmul(h, wq, p + "attn_q");
    ValueId k = b.matmul(h, wk, p + "attn_k");
    const ValueId v = b.matmul(h, wv, p + "attn_v");
    q = b.rope(q, positions, rope_q, p + "rope_q");
    k = b.rope(k, positions, rope_k, p + "rope_k");
    const auto pools = b.op_n(OpKind::kv_append, kvp, {k, v, slots, k_pool, v_pool}, p + "kv_append");
    if (pools.size() != 2) break;  // the builder holds the error
    const ValueId att = b.op(OpKind::paged_attention, attn,
                             {q, pools[0], pools[1], positions, query_start, seq_lens, block_tables}, p + "attention");
    x = b.add(x, b.matmul(att, wo, p + "attn_output"), p + "attn_residual");

    const ValueId h2 = b.rms_norm(x, ffn_norm, norm, p + "ffn_norm");
    const ValueId gate = b.matmul(h2, w_gate, p + "ffn_gate");
    const ValueId up = b.matmul(h2, w_up, p + "ffn_up");
    const ValueId act = b.silu_mul(gate, up, p + "ffn_silu_mul");
    x = b.add(x, b.matmul(act, w_down, p + "ffn_down"), p + "ffn_residual");
  }

  // Only the rows whose logits are asked for go through the classifier.
  x = b.gather_rows(x, logit_rows, "logit_rows");
  const ValueId out_norm = weight("output_norm.weight", Shape{dim});
  const ValueId classifier = c.tied_embeddings ? embd : weight("output.weight", Shape{c.vocab_size, dim});
  if (!missing.is_ok()) return missing;
  x = b.rms_norm(x, out_norm, norm, "output_norm");
  const ValueId logits = b.matmul(x, classifier, "output");
  b.mark_output(logits);
  if (o.sample_on_device) b.mark_output(b.op(OpKind::argmax, NoParams{}, {logits}, "sample_greedy"));
  return b.finish();
}

}  // namespace tessera
