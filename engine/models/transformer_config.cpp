#include "engine/models/transformer_config.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace tessera {

namespace {
constexpr std::array<std::string_view, kArchCount> kArchNames = {"llama", "qwen2", "qwen3", "gemma2", "phi3"};

Status bad(const std::string& source, const std::string& what) { return invalid_argument(source + ": " + what); }
}  // namespace

std::string_view name(Arch a) { return kArchNames[(size_t)a]; }

std::optional<Arch> arch_from_name(std::string_view n) {
  for (size_t i = 0; i < kArchNames.size(); ++i)
    if (kArchNames[i] == n) return static_cast<Arch>(i);
  return std::nullopt;
}

std::string supported_architectures() {
  std::string s;
  for (std::string_view n : kArchNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

int32_t TransformerConfig::layer_window(int32_t l) const {
  if (sliding_window <= 0) return 0;
  const int32_t n = sliding_window_pattern;
  return n <= 1 || l % n < n - 1 ? sliding_window : 0;
}

std::string first_difference(const TransformerConfig& a, const TransformerConfig& b) {
  auto num = [](double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.9g", v);
    return std::string(s);
  };
  struct Field {
    const char* name;
    double a, b;
  };
  const Field fields[] = {
      {"dim", (double)a.dim, (double)b.dim},
      {"hidden_dim", (double)a.hidden_dim, (double)b.hidden_dim},
      {"n_layers", (double)a.n_layers, (double)b.n_layers},
      {"n_heads", (double)a.n_heads, (double)b.n_heads},
      {"n_kv_heads", (double)a.n_kv_heads, (double)b.n_kv_heads},
      {"vocab_size", (double)a.vocab_size, (double)b.vocab_size},
      {"context_length", (double)a.context_length, (double)b.context_length},
      {"rope_dims", (double)a.rope_dims, (double)b.rope_dims},
      {"rope_theta", a.rope_theta, b.rope_theta},
      {"rms_eps", a.rms_eps, b.rms_eps},
      {"rope_layout", (double)a.rope_layout, (double)b.rope_layout},
      {"tied_embeddings", (double)a.tied_embeddings, (double)b.tied_embeddings},
      {"arch", (double)a.arch, (double)b.arch},
      {"head_dim", (double)a.head_dim(), (double)b.head_dim()},
      {"rope_freq_scale", a.rope_freq_scale, b.rope_freq_scale},
      {"rope_freq_factors", (double)a.rope_freq_factors, (double)b.rope_freq_factors},
      {"rope_original_context", (double)a.rope_original_context, (double)b.rope_original_context},
      {"sliding_window", (double)a.sliding_window, (double)b.sliding_window},
      {"sliding_window_pattern", (double)a.sliding_window_pattern, (double)b.sliding_window_pattern},
      {"unapplied_sliding_window", (double)a.unapplied_sliding_window, (double)b.unapplied_sliding_window},
      {"attn_logit_softcap", a.attn_logit_softcap, b.attn_logit_softcap},
      {"final_logit_softcap", a.final_logit_softcap, b.final_logit_softcap},
      {"attention_scale", a.attention_scale, b.attention_scale},
      {"embedding_scale", a.embedding_scale, b.embedding_scale},
      {"ffn_activation", (double)a.ffn_activation, (double)b.ffn_activation},
      {"qkv_bias", (double)a.qkv_bias, (double)b.qkv_bias},
      {"qk_norm", (double)a.qk_norm, (double)b.qk_norm},
      {"post_norms", (double)a.post_norms, (double)b.post_norms},
      {"fused_qkv", (double)a.fused_qkv, (double)b.fused_qkv},
      {"fused_gate_up", (double)a.fused_gate_up, (double)b.fused_gate_up},
  };
  for (const Field& f : fields)
    if (f.a != f.b) return std::string(f.name) + " " + num(f.a) + " vs " + num(f.b);
  return "";
}

std::vector<float> llama3_rope_freq_factors(const TransformerConfig& c, const Llama3RopeScaling& s) {
  const double low_wavelen = s.original_context / s.low_freq_factor, high_wavelen = s.original_context / s.high_freq_factor;
  std::vector<float> out;
  for (int32_t i = 0; i < c.rope_dims / 2; ++i) {
    const double freq = std::pow((double)c.rope_theta, -2.0 * i / c.rope_dims);
    const double wavelen = 2.0 * M_PI / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(s.factor);
    } else {
      const double smooth = (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      out.push_back((float)(1.0 / ((1.0 - smooth) / s.factor + smooth)));
    }
  }
  return out;
}

Status TransformerConfig::validate(const std::string& source) const {
  struct Count {
    const char* field;
    int32_t value;
  };
  for (const Count& c : {Count{"dim", dim}, Count{"hidden_dim", hidden_dim}, Count{"n_layers", n_layers},
                         Count{"n_heads", n_heads}, Count{"n_kv_heads", n_kv_heads}, Count{"vocab_size", vocab_size},
                         Count{"context_length", context_length}}) {
    if (c.value <= 0) return bad(source, std::string(c.field) + " is " + std::to_string(c.value) + "; expected > 0");
  }
  if (key_length < 0) return bad(source, "key_length is " + std::to_string(key_length) + "; expected > 0 (or 0: dim / n_heads)");
  if (key_length == 0 && dim % n_heads != 0)
    return bad(source, "dim " + std::to_string(dim) + " is not divisible by n_heads " + std::to_string(n_heads));
  if (n_heads % n_kv_heads != 0)
    return bad(source, "n_heads " + std::to_string(n_heads) + " is not divisible by n_kv_heads " +
                           std::to_string(n_kv_heads));
  if (rope_dims <= 0 || rope_dims > head_dim() || rope_dims % 2 != 0)
    return bad(source, "rope_dims " + std::to_string(rope_dims) + "; expected an even count in 2.." +
                           std::to_string(head_dim()) + " (head_dim)");
  if (!(rms_eps > 0.0f)) return bad(source, "rms_eps " + std::to_string(rms_eps) + "; expected > 0");
  if (!(rope_theta > 0.0f)) return bad(source, "rope_theta " + std::to_string(rope_theta) + "; expected > 0");
  if (!(rope_freq_scale > 0.0f) || !std::isfinite(rope_freq_scale))
    return bad(source, "rope_freq_scale " + std::to_string(rope_freq_scale) + "; expected > 0");
  if (sliding_window < 0) return bad(source, "sliding_window " + std::to_string(sliding_window) + "; expected >= 0");
  if (sliding_window_pattern < 0)
    return bad(source, "sliding_window_pattern " + std::to_string(sliding_window_pattern) + "; expected >= 0");
  for (float f : {attn_logit_softcap, final_logit_softcap, attention_scale, embedding_scale})
    if (!(f >= 0.0f) || !std::isfinite(f))
      return bad(source, "a soft-cap or scale is " + std::to_string(f) + "; expected a finite number >= 0");
  return Status::ok();
}

}  // namespace tessera
