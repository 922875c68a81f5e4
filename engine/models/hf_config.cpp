#include "engine/models/hf_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tessera {

namespace {
using json = nlohmann::json;

class ConfigReader {
 public:
  ConfigReader(const json& j, const std::string& path) : j_(j), path_(path) {}

  Status fail(const std::string& key, const std::string& what) const {
    return invalid_argument(path_ + ": key '" + key + "' " + what);
  }
  Status refuse(const std::string& key, const std::string& what) const {
    return unsupported(path_ + ": key '" + key + "' " + what);
  }
  // Present and not null (transformers writes null for "none").
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  bool is_null(const char* key) const { return j_.contains(key) && j_[key].is_null(); }
  const json& at(const char* key) const { return j_[key]; }
  std::string shown(const char* key) const { return j_[key].dump().substr(0, 120); }

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

  // A positive finite number; left as is when absent or null.
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

  // A string key that, when present, must be `expected`.
  Status must_be(const char* key, const char* expected) const {
    if (has(key) && !(j_[key].is_string() && j_[key].get<std::string>() == expected))
      return refuse(key, "is " + shown(key) + "; expected \"" + expected + "\"");
    return Status::ok();
  }
  // A boolean key that, when present, must be false.
  Status must_be_false(const char* key, const std::string& why) const {
    if (has(key) && !(j_[key].is_boolean() && !j_[key].get<bool>()))
      return refuse(key, "is " + shown(key) + "; expected false (" + why + ")");
    return Status::ok();
  }

 private:
  const json& j_;
  const std::string& path_;
};

// transformers' defaults, per config class, for the keys a config.json may leave out.
struct ArchDefaults {
  int64_t max_position_embeddings;
  float rms_norm_eps;
  int32_t head_dim;  // 0: hidden_size / num_attention_heads
};

ArchDefaults defaults_of(std::string_view model_type) {
  if (model_type == "mistral") return {4096 * 32, 1e-6f, 0};
  if (model_type == "qwen2") return {32768, 1e-6f, 0};
  if (model_type == "qwen3") return {32768, 1e-6f, 128};
  if (model_type == "gemma2") return {8192, 1e-6f, 256};
  if (model_type == "phi3") return {4096, 1e-5f, 0};
  return {2048, 1e-6f, 0};  // llama
}

// The sizes every architecture has, and the head size (key_length when it is not hidden / heads).
Status read_sizes(const ConfigReader& r, const ArchDefaults& d, TransformerConfig* c) {
  TS_TRY(r.count("hidden_size", -1, &c->dim));
  TS_TRY(r.count("intermediate_size", -1, &c->hidden_dim));
  TS_TRY(r.count("num_hidden_layers", -1, &c->n_layers));
  TS_TRY(r.count("num_attention_heads", -1, &c->n_heads));
  TS_TRY(r.count("num_key_value_heads", c->n_heads, &c->n_kv_heads));
  TS_TRY(r.count("vocab_size", -1, &c->vocab_size));
  TS_TRY(r.count("max_position_embeddings", d.max_position_embeddings, &c->context_length));
  c->rms_eps = d.rms_norm_eps;
  TS_TRY(r.positive("rms_norm_eps", &c->rms_eps));
  c->rope_theta = 10000.0f;
  TS_TRY(r.positive("rope_theta", &c->rope_theta));
  const bool divisible = c->dim % c->n_heads == 0;
  int32_t head_dim = d.head_dim ? d.head_dim : divisible ? c->dim / c->n_heads : 0;
  if (r.has("head_dim")) TS_TRY(r.count("head_dim", -1, &head_dim));
  if (head_dim == 0)
    return r.fail("hidden_size", std::to_string(c->dim) + " is not divisible by num_attention_heads " +
                                     std::to_string(c->n_heads) + " and there is no head_dim");
  // As the GGUF loader keeps it: 0 when the head size is hidden / heads.
  c->key_length = divisible && head_dim == c->dim / c->n_heads ? 0 : head_dim;
  c->rope_dims = c->head_dim();
  return Status::ok();
}

// rope_scaling (transformers v4) or rope_parameters (v5): none, linear, or
// llama3 (llama and mistral, whose converter bakes rope_freqs.weight).
Status read_rope_scaling(const ConfigReader& r, const json& j, Arch arch, HfConfig* out) {
  TransformerConfig& c = out->config;
  const char* key = r.has("rope_scaling") ? "rope_scaling" : "rope_parameters";
  if (!r.has(key)) return Status::ok();
  const json& s = r.at(key);
  if (!s.is_object()) return r.fail(key, "is " + r.shown(key) + "; expected an object or null");
  const json& type_value = s.contains("rope_type") ? s["rope_type"] : s.contains("type") ? s["type"] : json("default");
  const std::string type = type_value.is_string() ? type_value.get<std::string>() : type_value.dump();
  const std::string supported = "; supported: default, linear, llama3 (llama and mistral only)";
  auto number = [&](const char* name, float fallback, float* v) -> Status {
    *v = fallback;
    if (!s.contains(name) || s[name].is_null()) return Status::ok();
    if (!s[name].is_number() || !(s[name].get<double>() > 0.0) || !(s[name].get<double>() <= 1e30))
      return r.fail(key, "has " + std::string(name) + " " + s[name].dump() + "; expected a positive number");
    *v = (float)s[name].get<double>();
    return Status::ok();
  };
  // transformers v5 moves rope_theta in here.
  if (!j.contains("rope_theta")) TS_TRY(number("rope_theta", c.rope_theta, &c.rope_theta));
  if (type == "default") return Status::ok();
  if (type == "linear") {
    float factor = 0.0f;
    TS_TRY(number("factor", 0.0f, &factor));
    if (factor == 0.0f) return r.fail(key, "has rope_type 'linear' but no factor; expected a positive number");
    c.rope_freq_scale = 1.0f / factor;
    return Status::ok();
  }
  if (type == "llama3" && arch == Arch::llama) {
    // llama.cpp's converter's defaults where a key is missing.
    Llama3RopeScaling l3;
    float original = 8192.0f;
    TS_TRY(number("factor", 8.0f, &l3.factor));
    TS_TRY(number("low_freq_factor", 1.0f, &l3.low_freq_factor));
    TS_TRY(number("high_freq_factor", 4.0f, &l3.high_freq_factor));
    TS_TRY(number("original_max_position_embeddings", 8192.0f, &original));
    if (!(l3.high_freq_factor > l3.low_freq_factor))
      return r.fail(key, "has high_freq_factor " + std::to_string(l3.high_freq_factor) + " not above low_freq_factor " +
                             std::to_string(l3.low_freq_factor));
    if (original != std::floor(original) || original > (float)INT32_MAX)
      return r.fail(key, "has original_max_position_embeddings " + s["original_max_position_embeddings"].dump() +
                             "; expected a positive integer");
    l3.original_context = (int32_t)original;
    out->rope_freq_factors = llama3_rope_freq_factors(c, l3);
    c.rope_freq_factors = true;
    return Status::ok();
  }
  return r.refuse(key, "has rope_type '" + type.substr(0, 40) + "'" +
                           (type == "llama3" ? " for model_type " + std::string(name(arch)) : "") + supported);
}

// Qwen 2 and 3 window the layers from max_window_layers on when use_sliding_window
// is set; llama.cpp reads no window for them, so neither path can express it.
Status refuse_qwen_windows(const ConfigReader& r, const TransformerConfig& c) {
  if (r.has("layer_types")) {
    const json& types = r.at("layer_types");
    if (!types.is_array()) return r.fail("layer_types", "is " + r.shown("layer_types") + "; expected a list");
    for (const json& t : types)
      if (t != "full_attention")
        return r.refuse("layer_types", "is " + r.shown("layer_types") +
                                           "; only \"full_attention\" layers are supported (llama.cpp applies no window here)");
    return Status::ok();
  }
  bool windowed = false;
  TS_TRY(r.flag("use_sliding_window", &windowed));
  int32_t max_window_layers = 28;  // transformers' default
  if (r.has("max_window_layers")) TS_TRY(r.count("max_window_layers", -1, &max_window_layers));
  if (windowed && max_window_layers < c.n_layers)
    return r.refuse("use_sliding_window", "is true with max_window_layers " + std::to_string(max_window_layers) +
                                              " below num_hidden_layers " + std::to_string(c.n_layers) +
                                              "; sliding-window layers are not supported here (llama.cpp applies none)");
  return Status::ok();
}

Status read_llama(const ConfigReader& r, bool mistral, HfConfig* out) {
  TransformerConfig& c = out->config;
  TS_TRY(r.must_be_false("attention_bias", "llama's graph has no attention biases"));
  TS_TRY(r.must_be_false("mlp_bias", "llama's graph has no FFN biases"));
  // Mistral windows every layer (MistralConfig's default 4096 when the key is absent; null: none).
  if (mistral && !r.is_null("sliding_window")) {
    TS_TRY(r.count("sliding_window", 4096, &c.sliding_window));
    c.sliding_window_pattern = 1;
  }
  return Status::ok();
}

Status read_gemma2(const ConfigReader& r, HfConfig* out) {
  TransformerConfig& c = out->config;
  TS_TRY(r.must_be("hidden_activation", "gelu_pytorch_tanh"));
  TS_TRY(r.must_be_false("attention_bias", "gemma2's graph has no attention biases"));
  if (r.has("tie_word_embeddings") && !(r.at("tie_word_embeddings").is_boolean() && r.at("tie_word_embeddings").get<bool>()))
    return r.refuse("tie_word_embeddings", "is " + r.shown("tie_word_embeddings") +
                                               "; expected true (Gemma 2 classifies with its embedding, as llama.cpp does)");
  c.ffn_activation = FfnActivation::gelu;
  c.post_norms = true;
  c.tied_embeddings = true;
  c.embedding_scale = std::sqrt((float)c.dim);
  float query_pre_attn_scalar = 256.0f;
  TS_TRY(r.positive("query_pre_attn_scalar", &query_pre_attn_scalar));
  c.attention_scale = 1.0f / std::sqrt(query_pre_attn_scalar);
  // null: no cap (transformers skips it); absent: Gemma2Config's defaults.
  c.attn_logit_softcap = r.is_null("attn_logit_softcapping") ? 0.0f : 50.0f;
  c.final_logit_softcap = r.is_null("final_logit_softcapping") ? 0.0f : 30.0f;
  TS_TRY(r.positive("attn_logit_softcapping", &c.attn_logit_softcap));
  TS_TRY(r.positive("final_logit_softcapping", &c.final_logit_softcap));
  // Gemma 2 windows layers 0, 2, 4, ... (layer_types when stated must say so): llama.cpp's pattern 2.
  if (!r.is_null("sliding_window")) TS_TRY(r.count("sliding_window", 4096, &c.sliding_window));
  c.sliding_window_pattern = 2;
  if (r.has("layer_types")) {
    const json& types = r.at("layer_types");
    bool alternating = types.is_array() && types.size() == (size_t)c.n_layers;
    for (size_t i = 0; alternating && i < types.size(); ++i)
      alternating = types[i] == (i % 2 == 0 ? "sliding_attention" : "full_attention");
    if (!alternating)
      return r.refuse("layer_types", "is " + r.shown("layer_types") +
                                         "; only Gemma 2's alternation (sliding_attention, full_attention, ...) is supported");
  }
  return Status::ok();
}

Status read_phi3(const ConfigReader& r, HfConfig* out) {
  TransformerConfig& c = out->config;
  c.fused_qkv = true;
  c.fused_gate_up = true;
  // llama.cpp's converter: rope dims = int(partial_rotary_factor * hidden) // heads.
  if (r.has("partial_rotary_factor")) {
    const json& v = r.at("partial_rotary_factor");
    if (!v.is_number() || !(v.get<double>() > 0.0) || !(v.get<double>() <= 1.0))
      return r.fail("partial_rotary_factor", "is " + v.dump() + "; expected a number in (0, 1]");
    c.rope_dims = (int32_t)(v.get<double>() * c.dim) / c.n_heads;
  }
  if (r.has("original_max_position_embeddings"))
    TS_TRY(r.count("original_max_position_embeddings", -1, &c.rope_original_context));
  if (r.has("sliding_window")) {
    TS_TRY(r.count("sliding_window", -1, &c.unapplied_sliding_window));
    out->notes.push_back("sliding_window " + std::to_string(c.unapplied_sliding_window) +
                         " is not applied, as llama.cpp does not apply it to phi3: beyond that many tokens attention "
                         "differs from transformers'");
  }
  return Status::ok();
}

}  // namespace

Expected<HfConfig> parse_hf_config(std::string_view text, const std::string& path) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalid_argument(path + ": is not a JSON object; expected a Hugging Face config.json");
  if (!j.contains("model_type") || !j["model_type"].is_string())
    return invalid_argument(path + ": key 'model_type' is missing or not a string; supported: " + hf_architecture_names());
  const std::string type = j["model_type"].get<std::string>();
  HfConfig out;
  out.arch = find_hf_architecture(type);
  if (!out.arch)
    return unsupported(path + ": key 'model_type' is '" + type.substr(0, 64) + "'; supported: " + hf_architecture_names());
  TransformerConfig& c = out.config;
  c.arch = *arch_from_name(out.arch->gguf_arch);
  // HF rotates the halves of each head (rotate_half): NeoX order, as GGUF keeps it
  // for every architecture but llama (whose rows convert permutes).
  c.rope_layout = RopeLayout::half_split;
  const ConfigReader r(j, path);
  TS_TRY(read_sizes(r, defaults_of(type), &c));
  c.tied_embeddings = false;
  TS_TRY(r.flag("tie_word_embeddings", &c.tied_embeddings));
  if (c.arch != Arch::gemma2) TS_TRY(r.must_be("hidden_act", "silu"));
  if (c.arch != Arch::phi3 && r.has("partial_rotary_factor") &&
      !(r.at("partial_rotary_factor").is_number() && r.at("partial_rotary_factor").get<double>() == 1.0))
    return r.refuse("partial_rotary_factor", "is " + r.shown("partial_rotary_factor") + "; only phi3 rotates part of a head");
  switch (c.arch) {
    case Arch::llama:
      TS_TRY(read_llama(r, type == "mistral", &out));
      break;
    case Arch::qwen2:
      c.qkv_bias = true;  // Qwen 2's Q, K and V projections always have biases
      TS_TRY(refuse_qwen_windows(r, c));
      break;
    case Arch::qwen3:
      c.qk_norm = true;
      TS_TRY(r.must_be_false("attention_bias", "qwen3's output projection would need a bias"));
      TS_TRY(refuse_qwen_windows(r, c));
      break;
    case Arch::gemma2:
      TS_TRY(read_gemma2(r, &out));
      break;
    case Arch::phi3:
      TS_TRY(read_phi3(r, &out));
      break;
  }
  TS_TRY(read_rope_scaling(r, j, c.arch, &out));
  TS_TRY(c.validate(path));
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
