#include "engine/runtime/model_graph.h"

#include <cmath>
#include <string>

#include "graph/builder.h"

namespace tessera {

using graph::GraphBuilder;
using graph::ValueId;

Expected<graph::Graph> build_model_graph(const ModelWeights& w, const KvLayout& kv, const ModelGraphOptions& o) {
  const TransformerConfig& c = w.config;
  TS_TRY(c.validate(w.source));
  if (c.fused_gate_up && c.ffn_activation != FfnActivation::silu)
    return unsupported(w.source + ": a packed gate/up FFN weight with GELU gating (only SiLU's is implemented)");
  const int64_t dim = c.dim, hd = c.head_dim(), q_dim = c.q_dim(), kv_dim = c.kv_dim();
  GraphBuilder b(std::string(name(c.arch)));
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
  // llama3's per-pair frequency divisors, read by every rope.
  const ValueId freq_factors = c.rope_freq_factors ? weight("rope_freqs.weight", Shape{c.rope_dims / 2}) : graph::kNoValue;
  if (!missing.is_ok()) return missing;
  ValueId x = b.embedding(embd, ids, "token_embd");
  if (c.embedding_scale != 0.0f) x = b.op(OpKind::scale, ScaleParams{c.embedding_scale}, {x}, "token_embd_scale");

  const RmsNormParams norm{c.rms_eps};
  RopeParams rope_q{c.n_heads, (int32_t)hd, c.rope_dims ? c.rope_dims : (int32_t)hd, c.rope_theta, c.rope_layout};
  rope_q.freq_scale = c.rope_freq_scale;
  RopeParams rope_k = rope_q;
  rope_k.n_heads = c.n_kv_heads;
  auto rope = [&](ValueId v, const RopeParams& p, const std::string& label) {
    if (freq_factors == graph::kNoValue) return b.rope(v, positions, p, label);
    return b.op(OpKind::rope, p, {v, positions, freq_factors}, label);
  };
  const KvCacheParams kvp{c.n_kv_heads, (int32_t)hd, kv.block_size};
  AttentionParams attn{c.n_heads, c.n_kv_heads, (int32_t)hd, kv.block_size,
                       c.attention_scale != 0.0f ? c.attention_scale : 1.0f / std::sqrt((float)hd), true};
  attn.softcap = c.attn_logit_softcap;
  const TensorDesc pool_desc = TensorDesc::contiguous(kv.dtype, Shape{kv.num_slots(), kv_dim});

  for (int32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const ValueId attn_norm = weight(p + "attn_norm.weight", Shape{dim});
    const ValueId wqkv = c.fused_qkv ? weight(p + "attn_qkv.weight", Shape{q_dim + 2 * kv_dim, dim}) : graph::kNoValue;
    const ValueId wq = c.fused_qkv ? graph::kNoValue : weight(p + "attn_q.weight", Shape{q_dim, dim});
    const ValueId wk = c.fused_qkv ? graph::kNoValue : weight(p + "attn_k.weight", Shape{kv_dim, dim});
    const ValueId wv = c.fused_qkv ? graph::kNoValue : weight(p + "attn_v.weight", Shape{kv_dim, dim});
    const ValueId bq = c.qkv_bias ? weight(p + "attn_q.bias", Shape{q_dim}) : graph::kNoValue;
    const ValueId bk = c.qkv_bias ? weight(p + "attn_k.bias", Shape{kv_dim}) : graph::kNoValue;
    const ValueId bv = c.qkv_bias ? weight(p + "attn_v.bias", Shape{kv_dim}) : graph::kNoValue;
    const ValueId q_norm = c.qk_norm ? weight(p + "attn_q_norm.weight", Shape{hd}) : graph::kNoValue;
    const ValueId k_norm = c.qk_norm ? weight(p + "attn_k_norm.weight", Shape{hd}) : graph::kNoValue;
    const ValueId wo = weight(p + "attn_output.weight", Shape{dim, q_dim});
    const ValueId post_attn_norm = c.post_norms ? weight(p + "post_attention_norm.weight", Shape{dim}) : graph::kNoValue;
    const ValueId ffn_norm = weight(p + "ffn_norm.weight", Shape{dim});
    const ValueId w_gate = c.fused_gate_up ? graph::kNoValue : weight(p + "ffn_gate.weight", Shape{c.hidden_dim, dim});
    const ValueId w_up = weight(p + "ffn_up.weight", Shape{(c.fused_gate_up ? 2 : 1) * (int64_t)c.hidden_dim, dim});
    const ValueId w_down = weight(p + "ffn_down.weight", Shape{dim, c.hidden_dim});
    const ValueId post_ffw_norm = c.post_norms ? weight(p + "post_ffw_norm.weight", Shape{dim}) : graph::kNoValue;
    if (!missing.is_ok()) return missing;
    const ValueId k_pool = b.kv_pool(p + "k_cache", pool_desc);
    const ValueId v_pool = b.kv_pool(p + "v_cache", pool_desc);

    const ValueId h = b.rms_norm(x, attn_norm, norm, p + "attn_norm");
    ValueId q, k, v;
    if (c.fused_qkv) {
      // The file's packed projection: Q's rows, then K's, then V's.
      const auto qkv = b.op_n(OpKind::matmul_qkv, QkvSplitParams{(int32_t)q_dim, (int32_t)kv_dim}, {h, wqkv}, p + "attn_qkv");
      if (qkv.size() != 3) break;  // the builder holds the error
      q = qkv[0], k = qkv[1], v = qkv[2];
    } else {
      q = b.matmul(h, wq, p + "attn_q");
      k = b.matmul(h, wk, p + "attn_k");
      v = b.matmul(h, wv, p + "attn_v");
    }
    if (c.qkv_bias) {
      q = b.op(OpKind::bias_add, NoParams{}, {q, bq}, p + "attn_q_bias");
      k = b.op(OpKind::bias_add, NoParams{}, {k, bk}, p + "attn_k_bias");
      v = b.op(OpKind::bias_add, NoParams{}, {v, bv}, p + "attn_v_bias");
    }
    if (c.qk_norm) {
      q = b.op(OpKind::head_rms_norm, norm, {q, q_norm}, p + "attn_q_norm");
      k = b.op(OpKind::head_rms_norm, norm, {k, k_norm}, p + "attn_k_norm");
    }
    q = rope(q, rope_q, p + "rope_q");
    k = rope(k, rope_k, p + "rope_k");
    const auto pools = b.op_n(OpKind::kv_append, kvp, {k, v, slots, k_pool, v_pool}, p + "kv_append");
    if (pools.size() != 2) break;  // the builder holds the error
    attn.window = c.layer_window(l);
    const ValueId att = b.op(OpKind::paged_attention, attn,
                             {q, pools[0], pools[1], positions, query_start, seq_lens, block_tables}, p + "attention");
    ValueId o_proj = b.matmul(att, wo, p + "attn_output");
    if (c.post_norms) o_proj = b.rms_norm(o_proj, post_attn_norm, norm, p + "post_attention_norm");
    x = b.add(x, o_proj, p + "attn_residual");

    const ValueId h2 = b.rms_norm(x, ffn_norm, norm, p + "ffn_norm");
    ValueId act;
    if (c.fused_gate_up) {
      // The file's packed gate/up projection: the gate's rows, then the up's.
      act = b.op(OpKind::matmul_silu_mul, NoParams{}, {h2, w_up}, p + "ffn_up+silu");
    } else {
      const ValueId gate = b.matmul(h2, w_gate, p + "ffn_gate");
      const ValueId up = b.matmul(h2, w_up, p + "ffn_up");
      if (c.ffn_activation == FfnActivation::silu) {
        act = b.silu_mul(gate, up, p + "ffn_silu_mul");
      } else {
        act = b.op(OpKind::gelu_mul, NoParams{}, {gate, up}, p + "ffn_gelu_mul");
      }
    }
    ValueId down = b.matmul(act, w_down, p + "ffn_down");
    if (c.post_norms) down = b.rms_norm(down, post_ffw_norm, norm, p + "post_ffw_norm");
    x = b.add(x, down, p + "ffn_residual");
  }

  // Only the rows whose logits are asked for go through the classifier.
  x = b.gather_rows(x, logit_rows, "logit_rows");
  const ValueId out_norm = weight("output_norm.weight", Shape{dim});
  const ValueId classifier = c.tied_embeddings ? embd : weight("output.weight", Shape{c.vocab_size, dim});
  if (!missing.is_ok()) return missing;
  x = b.rms_norm(x, out_norm, norm, "output_norm");
  ValueId logits = b.matmul(x, classifier, "output");
  if (c.final_logit_softcap != 0.0f) logits = b.op(OpKind::softcap, SoftcapParams{c.final_logit_softcap}, {logits}, "output_softcap");
  b.mark_output(logits);
  if (o.sample_on_device) b.mark_output(b.op(OpKind::argmax, NoParams{}, {logits}, "sample_greedy"));
  return b.finish();
}

}  // namespace tessera
