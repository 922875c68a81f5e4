#include "engine/models/llama_config.h"

namespace tessera {

namespace {
Status bad(const std::string& source, const std::string& what) { return invalid_argument(source + ": " + what); }
}  // namespace

Status LlamaConfig::validate(const std::string& source) const {
  struct Count {
    const char* field;
    int32_t value;
  };
  for (const Count& c : {Count{"dim", dim}, Count{"hidden_dim", hidden_dim}, Count{"n_layers", n_layers},
                         Count{"n_heads", n_heads}, Count{"n_kv_heads", n_kv_heads}, Count{"vocab_size", vocab_size},
                         Count{"context_length", context_length}}) {
    if (c.value <= 0) return bad(source, std::string(c.field) + " is " + std::to_string(c.value) + "; expected > 0");
  }
  if (dim % n_heads != 0)
    return bad(source, "dim " + std::to_string(dim) + " is not divisible by n_heads " + std::to_string(n_heads));
  if (n_heads % n_kv_heads != 0)
    return bad(source, "n_heads " + std::to_string(n_heads) + " is not divisible by n_kv_heads " +
                           std::to_string(n_kv_heads));
  if (rope_dims <= 0 || rope_dims > head_dim() || rope_dims % 2 != 0)
    return bad(source, "rope_dims " + std::to_string(rope_dims) + "; expected an even count in 2.." +
                           std::to_string(head_dim()) + " (head_dim)");
  if (!(rms_eps > 0.0f)) return bad(source, "rms_eps " + std::to_string(rms_eps) + "; expected > 0");
  if (!(rope_theta > 0.0f)) return bad(source, "rope_theta " + std::to_string(rope_theta) + "; expected > 0");
  return Status::ok();
}

}  // namespace tessera
