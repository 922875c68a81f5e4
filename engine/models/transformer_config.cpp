#include "engine/models/transformer_config.h"

#include <array>
#include <cmath>

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
