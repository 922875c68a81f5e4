#include <cstdio>

#include "engine/api/model_impl.h"

namespace tessera {

ModelConfig to_model_config(const TransformerConfig& c) {
  ModelConfig m;
  m.architecture = std::string(name(c.arch));
  m.vocab_size = c.vocab_size;
  m.context_length = c.context_length;
  m.embedding_dim = c.dim;
  m.ffn_dim = c.hidden_dim;
  m.layers = c.n_layers;
  m.heads = c.n_heads;
  m.kv_heads = c.n_kv_heads;
  m.head_dim = c.head_dim();
  m.rope_dims = c.rope_dims;
  m.rope_theta = c.rope_theta;
  m.rope_pairs = c.rope_layout == RopeLayout::interleaved ? "interleaved" : "half-split";
  m.norm_eps = c.rms_eps;
  m.tied_embeddings = c.tied_embeddings;
  auto num = [](float f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", f);
    return std::string(buf);
  };
  auto& f = m.features;
  if (c.fused_qkv) f.push_back("packed Q/K/V projection (attn_qkv)");
  if (c.qkv_bias) f.push_back("Q/K/V biases");
  if (c.qk_norm) f.push_back("RMSNorm of each Q and K head");
  if (c.rope_freq_factors) f.push_back("RoPE frequency factors (rope_freqs)");
  if (c.rope_freq_scale != 1.0f) f.push_back("RoPE positions scaled by " + num(c.rope_freq_scale));
  if (c.sliding_window > 0) {
    const int32_t n = c.sliding_window_pattern;
    f.push_back("sliding window " + std::to_string(c.sliding_window) +
                (n <= 1   ? std::string(" on every layer")
                 : n == 2 ? std::string(" on the even layers")
                          : " on layers l with l % " + std::to_string(n) + " < " + std::to_string(n - 1)));
  }
  if (c.attention_scale != 0.0f) f.push_back("attention scale " + num(c.attention_scale));
  if (c.attn_logit_softcap != 0.0f) f.push_back("attention scores soft-capped at " + num(c.attn_logit_softcap));
  if (c.post_norms) f.push_back("RMSNorm of each block's output before its residual add");
  if (c.fused_gate_up) f.push_back("packed gate/up projection (ffn_up)");
  if (c.ffn_activation == FfnActivation::gelu) f.push_back("GELU (tanh) gating");
  if (c.embedding_scale != 0.0f) f.push_back("embeddings scaled by " + num(c.embedding_scale));
  if (c.final_logit_softcap != 0.0f) f.push_back("logits soft-capped at " + num(c.final_logit_softcap));
  return m;
}

}  // namespace tessera
