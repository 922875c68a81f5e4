#include "engine/models/hf_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tessera {

namespace {
using json = nlohmann::json;

constexpr std::string_view kReadable[] = {"llama", "mistral"};

std::string readable_names() {
  std::string s;
  for (std::string_view t : kReadable) s += (s.empty() ? "" : ", ") + std::string(t);
  return s;
}

class ConfigReader {
 public:
  ConfigReader(const json& j, const std::string& path) : j_(j), path_(path) {}

  Status fail(const std::string& key, const std::string& what) const {
    return invalid_argument(path_ + ": key '" + key + "' " + what);
  }
  Status refuse(const std::string& key, const std::string& what) const {
    return unsupported(path_ + ": key '" + key + "' " + what);
  }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  // A positive count below 2^31; `fallback` (when > 0) if the key is absent.
  Status count(const char* key, int64_t fallback, int32_t* out) const {
    if (!has(key)) {
      if (fallback <= 0) return fail(key, "is missing; expected a positive integer");
      *out = (int32_t)fallback;
      return Status::ok();
    }
    const json& v = j_[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > INT32_MAX)
      return fail(key, "is " + v.dump() + "; expected a positive integer below 2^31");
    *out = (int32_t)v.get<int64_t>();
    return Status::ok();
  }

  // A positive finite number; left as is when absent.
  Status positive(const char* key, float* out) const {
    if (!has(key)) return Status::ok();
    const json& v = j_[key];
    // Compared as double first: casting a double beyond float's range is undefined.
    if (!v.is_number() || !(v.get<double>() > 0.0) || !(v.get<double>() <= 1e30))
      return fail(key, "is " + v.dump() + "; expected a positive number");
    *out = (float)v.get<double>();
    return Status::ok();
  }

  Status flag(const char* key, bool* out) const {
    if (!has(key)) return Status::ok();
    if (!j_[key].is_boolean()) return fail(key, "is " + j_[key].dump() + "; expected true or false");
    *out = j_[key].get<bool>();
    return Status::ok();
  }

 private:
  const json& j_;
  const std::string& path_;
};

Status read_llama_fields(const ConfigReader& r, const json& j, HfConfig* out) {
  TransformerConfig& c = out->llama;
  TS_TRY(r.count("hidden_size", -1, &c.dim));
  TS_TRY(r.count("intermediate_size", -1, &c.hidden_dim));
  TS_TRY(r.count("num_hidden_layers", -1, &c.n_layers));
  TS_TRY(r.count("num_attention_heads", -1, &c.n_heads));
  TS_TRY(r.count("num_key_value_heads", c.n_heads, &c.n_kv_heads));
  TS_TRY(r.count("vocab_size", -1, &c.vocab_size));
  // transformers' LlamaConfig default when the key is absent.
  TS_TRY(r.count("max_position_embeddings", 2048, &c.context_length));
  c.rms_eps = 1e-6f;  // transformers' default for both llama and mistral
  TS_TRY(r.positive("rms_norm_eps", &c.rms_eps));
  c.rope_theta = 10000.0f;
  TS_TRY(r.positive("rope_theta", &c.rope_theta));
  c.tied_embeddings = false;
  TS_TRY(r.flag("tie_word_embeddings", &c.tied_embeddings));
  if (c.dim % c.n_heads != 0)
    return r.fail("hidden_size", std::to_string(c.dim) + " is not divisible by num_attention_heads " + std::to_string(c.n_heads));
  if (r.has("head_dim")) {
    int32_t head_dim = 0;
    TS_TRY(r.count("head_dim", -1, &head_dim));
    if (head_dim != c.head_dim())
      return r.refuse("head_dim", "is " + std::to_string(head_dim) +
                         "; only hidden_size / num_attention_heads (" + std::to_string(c.head_dim()) + ") is supported");
  }
  // HF rotates the halves of each head (rotate_half): NeoX order, over the whole head.
  c.rope_layout = RopeLayout::half_split;
  c.rope_dims = c.head_dim();
  if (r.has("hidden_act") && !(j["hidden_act"].is_string() && j["hidden_act"].get<std::string>() == "silu"))
    return r.refuse("hidden_act", "is " + j["hidden_act"].dump() + "; expected \"silu\"");
  if (r.has("rope_scaling"))
    return r.refuse("rope_scaling", "is " + j["rope_scaling"].dump().substr(0, 120) +
                       "; RoPE scaling is not supported (expected null)");
  if (r.has("attention_bias") && !(j["attention_bias"].is_boolean() && !j["attention_bias"].get<bool>()))
    return r.refuse("attention_bias", "is " + j["attention_bias"].dump() + "; expected false");
  if (r.has("mlp_bias") && !(j["mlp_bias"].is_boolean() && !j["mlp_bias"].get<bool>()))
    return r.refuse("mlp_bias", "is " + j["mlp_bias"].dump() + "; expected false");
  // No sliding-window attention here: keep the context within the window, where full attention is the same.
  if (r.has("sliding_window")) {
    int32_t window = 0;
    TS_TRY(r.count("sliding_window", -1, &window));
    if (window < c.context_length) {
      out->notes.push_back("context capped at sliding_window " + std::to_string(window) + " (max_position_embeddings " +
                           std::to_string(c.context_length) + "): sliding-window attention is not implemented");
      c.context_length = window;
    }
  }
  return Status::ok();
}
}  // namespace

Expected<HfConfig> parse_hf_config(std::string_view text, const std::string& path) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalid_argument(path + ": is not a JSON object; expected a Hugging Face config.json");
  if (!j.contains("model_type") || !j["model_type"].is_string())
    return invalid_argument(path + ": key 'model_type' is missing or not a string; supported: " + readable_names());
  const std::string type = j["model_type"].get<std::string>();
  bool readable = false;
  for (std::string_view t : kReadable) readable |= t == type;
  if (!readable)
    return unsupported(path + ": model_type '" + type.substr(0, 64) + "' is not supported; supported: " + readable_names());
  HfConfig out;
  out.arch = find_hf_architecture(type);
  const ConfigReader r(j, path);
  TS_TRY(read_llama_fields(r, j, &out));
  TS_TRY(out.llama.validate(path));
  return out;
}

Expected<HfConfig> read_hf_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot be opened");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_hf_config(ss.str(), path);
}

}  // namespace tessera
