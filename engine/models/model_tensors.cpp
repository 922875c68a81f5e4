#include "engine/models/model_tensors.h"

namespace tessera {

Status check_model_tensors(const ModelWeights& m, const std::set<std::string>& ignored) {
  const TransformerConfig& c = m.config;
  const int64_t dim = c.dim, hidden = c.hidden_dim, vocab = c.vocab_size, hd = c.head_dim();
  const int64_t q_dim = c.q_dim(), kv_dim = c.kv_dim();
  std::set<std::string> used = ignored;
  auto need = [&](const std::string& name, const Shape& shape) {
    used.insert(name);
    return m.require(name, shape).status();
  };
  TS_TRY(need("token_embd.weight", {vocab, dim}));
  if (c.rope_freq_factors) TS_TRY(need("rope_freqs.weight", {c.rope_dims / 2}));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    TS_TRY(need(p + "attn_norm.weight", {dim}));
    if (c.fused_qkv) {
      TS_TRY(need(p + "attn_qkv.weight", {q_dim + 2 * kv_dim, dim}));
    } else {
      TS_TRY(need(p + "attn_q.weight", {q_dim, dim}));
      TS_TRY(need(p + "attn_k.weight", {kv_dim, dim}));
      TS_TRY(need(p + "attn_v.weight", {kv_dim, dim}));
    }
    if (c.qkv_bias) {
      TS_TRY(need(p + "attn_q.bias", {q_dim}));
      TS_TRY(need(p + "attn_k.bias", {kv_dim}));
      TS_TRY(need(p + "attn_v.bias", {kv_dim}));
    }
    if (c.qk_norm) {
      TS_TRY(need(p + "attn_q_norm.weight", {hd}));
      TS_TRY(need(p + "attn_k_norm.weight", {hd}));
    }
    TS_TRY(need(p + "attn_output.weight", {dim, q_dim}));
    if (c.post_norms) {
      TS_TRY(need(p + "post_attention_norm.weight", {dim}));
      TS_TRY(need(p + "post_ffw_norm.weight", {dim}));
    }
    TS_TRY(need(p + "ffn_norm.weight", {dim}));
    if (c.fused_gate_up) {
      TS_TRY(need(p + "ffn_up.weight", {2 * hidden, dim}));
    } else {
      TS_TRY(need(p + "ffn_gate.weight", {hidden, dim}));
      TS_TRY(need(p + "ffn_up.weight", {hidden, dim}));
    }
    TS_TRY(need(p + "ffn_down.weight", {dim, hidden}));
  }
  TS_TRY(need("output_norm.weight", {dim}));
  if (!c.tied_embeddings) TS_TRY(need("output.weight", {vocab, dim}));
  for (const WeightTensor& t : m.tensors) {
    if (used.count(t.name)) continue;
    std::string why = "the " + std::string(name(c.arch)) + " graph does not read it";
    if (t.name.find("rope_factors") != std::string::npos) why = "LongRoPE (rope_factors_long/short) is not supported";
    else if (t.name.find(".bias") != std::string::npos) why = "the " + std::string(name(c.arch)) + " graph reads no such bias";
    return unsupported(m.source + ": tensor '" + t.name + "': " + why + "; running without it would compute another model");
  }
  return Status::ok();
}

}  // namespace tessera
