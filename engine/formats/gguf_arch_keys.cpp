#include "engine/formats/gguf_arch_keys.h"

#include <cmath>

namespace tessera {

namespace {
// The factor to write for a linear RoPE scale: the float whose reciprocal the
// loader computes back to exactly `scale` (1 / (1 / s) can miss it by an ulp).
float linear_factor(float scale) {
  float f = 1.0f / scale;
  for (int i = 0; i < 4 && 1.0f / f != scale; ++i) f = std::nextafter(f, 1.0f / f > scale ? INFINITY : 0.0f);
  return f;
}
}  // namespace

Status write_arch_keys(GgufWriter& w, const TransformerConfig& c, const std::string& source) {
  const std::string arch(name(c.arch));
  auto refuse = [&](const std::string& field, const std::string& what) {
    return unsupported(source + ": " + field + " " + what + "; GGUF's " + arch + ".* keys cannot state it");
  };
  if (c.arch == Arch::gemma2) {
    // llama.cpp's defaults stand in for an absent key: "no cap" has no spelling.
    if (c.attn_logit_softcap == 0.0f || c.final_logit_softcap == 0.0f)
      return refuse("attn_logit_softcapping / final_logit_softcapping", "is none (null)");
    // llama.cpp derives the score scale from the shape (1/sqrt(head_dim); 1/sqrt(dim/heads) for 46 layers).
    const float derived = c.n_layers == 46 ? 1.0f / std::sqrt((float)(c.dim / c.n_heads)) : 1.0f / std::sqrt((float)c.head_dim());
    if (c.attention_scale != derived)
      return refuse("query_pre_attn_scalar", "gives the score scale " + std::to_string(c.attention_scale) +
                                                 " where llama.cpp derives " + std::to_string(derived));
  }
  const std::string p = arch + ".";
  w.set_string("general.architecture", arch);
  w.set_u32(p + "context_length", (uint32_t)c.context_length);
  w.set_u32(p + "embedding_length", (uint32_t)c.dim);
  w.set_u32(p + "block_count", (uint32_t)c.n_layers);
  w.set_u32(p + "feed_forward_length", (uint32_t)c.hidden_dim);
  w.set_u32(p + "attention.head_count", (uint32_t)c.n_heads);
  w.set_u32(p + "attention.head_count_kv", (uint32_t)c.n_kv_heads);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", c.rms_eps);
  // llama.cpp's converter leaves it out for gemma2 (its default, 10000): stated anyway, it is the same.
  w.set_f32(p + "rope.freq_base", c.rope_theta);
  // Qwen 3 and Gemma 2 configs always carry head_dim, which the converter writes as both lengths.
  if (c.key_length != 0 || c.arch == Arch::qwen3 || c.arch == Arch::gemma2) {
    w.set_u32(p + "attention.key_length", (uint32_t)c.head_dim());
    w.set_u32(p + "attention.value_length", (uint32_t)c.head_dim());
  }
  if (c.arch == Arch::llama || c.arch == Arch::phi3 || c.rope_dims != c.head_dim())
    w.set_u32(p + "rope.dimension_count", (uint32_t)c.rope_dims);
  if (c.arch == Arch::llama) w.set_u32(p + "vocab_size", (uint32_t)c.vocab_size);
  if (c.rope_freq_scale != 1.0f) {
    w.set_string(p + "rope.scaling.type", "linear");
    w.set_f32(p + "rope.scaling.factor", linear_factor(c.rope_freq_scale));
  }
  if (c.rope_original_context > 0) w.set_u32(p + "rope.scaling.original_context_length", (uint32_t)c.rope_original_context);
  switch (c.arch) {
    case Arch::llama:
      // Not from llama.cpp's converter (it writes no window for Mistral): our loader reads it for every layer.
      if (c.sliding_window > 0) w.set_u32(p + "attention.sliding_window", (uint32_t)c.sliding_window);
      break;
    case Arch::qwen3:
      break;
    case Arch::qwen2:
      if (c.unapplied_sliding_window > 0) w.set_u32(p + "attention.sliding_window", (uint32_t)c.unapplied_sliding_window);
      break;
    case Arch::phi3:
      // The converter always writes it (0 when config.json has none); llama.cpp does not apply it.
      w.set_u32(p + "attention.sliding_window", (uint32_t)c.unapplied_sliding_window);
      break;
    case Arch::gemma2:
      w.set_u32(p + "attention.sliding_window", (uint32_t)c.sliding_window);
      if (c.sliding_window_pattern != 2) w.set_u32(p + "attention.sliding_window_pattern", (uint32_t)c.sliding_window_pattern);
      w.set_f32(p + "attn_logit_softcapping", c.attn_logit_softcap);
      w.set_f32(p + "final_logit_softcapping", c.final_logit_softcap);
      break;
  }
  return Status::ok();
}

}  // namespace tessera
