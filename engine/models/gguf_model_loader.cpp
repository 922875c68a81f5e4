#include "engine/models/gguf_model_loader.h"

#include <cmath>
#include <set>

#include "engine/formats/gguf.h"
#include "engine/models/gguf_tokenizer.h"
#include "engine/models/model_tensors.h"

namespace tessera {

namespace {

// The {arch}.* keys of one file, each read once and remembered as consumed
// (the keys left over are shown as metadata by `tessera info`).
class Keys {
 public:
  Keys(const GgufFile& f, std::string prefix, std::set<std::string>* consumed)
      : f_(f), prefix_(std::move(prefix) + "."), consumed_(consumed) {}

  std::string key(const std::string& k) const { return prefix_ + k; }
  bool has(const std::string& k) {
    consumed_->insert(key(k));
    return f_.has(key(k));
  }

  // A positive int32 count; `fallback` (when >= 0) is used if the key is absent.
  Status count(const std::string& k, int64_t fallback, int32_t* out) {
    const std::string full = key(k);
    consumed_->insert(full);
    if (!f_.has(full)) {
      if (fallback < 0) return not_found(f_.path() + ": key '" + full + "' is missing");
      if (fallback == 0 || fallback > INT32_MAX)
        return invalid_argument(f_.path() + ": key '" + full + "' is missing and its default " + std::to_string(fallback) +
                                " is not a positive count below 2^31");
      *out = (int32_t)fallback;
      return Status::ok();
    }
    TS_ASSIGN_OR_RETURN(const uint64_t v, f_.get_uint(full));
    if (v == 0 || v > (uint64_t)INT32_MAX)
      return f_.key_error(full, "is " + std::to_string(v) + "; expected a positive count below 2^31");
    *out = (int32_t)v;
    return Status::ok();
  }

  // A non-negative int32 (0 allowed: "none"); *out unchanged when absent.
  Status size(const std::string& k, int32_t* out) {
    const std::string full = key(k);
    consumed_->insert(full);
    if (!f_.has(full)) return Status::ok();
    TS_ASSIGN_OR_RETURN(const uint64_t v, f_.get_uint(full));
    if (v > (uint64_t)INT32_MAX) return f_.key_error(full, "is " + std::to_string(v) + "; expected a count below 2^31");
    *out = (int32_t)v;
    return Status::ok();
  }

  // A positive number; *out unchanged when absent.
  Status positive(const std::string& k, float* out) {
    const std::string full = key(k);
    consumed_->insert(full);
    if (!f_.has(full)) return Status::ok();
    TS_ASSIGN_OR_RETURN(const double v, f_.get_float(full));
    if (!(v > 0.0) || v > 1e30) return f_.key_error(full, "is " + std::to_string(v) + "; expected a positive number");
    *out = (float)v;
    return Status::ok();
  }

  Expected<std::string> string_or(const std::string& k, const std::string& fallback) {
    const std::string full = key(k);
    consumed_->insert(full);
    if (!f_.has(full)) return fallback;
    return f_.get_string(full);
  }

 private:
  const GgufFile& f_;
  std::string prefix_;
  std::set<std::string>* consumed_;
};

// RoPE scaling: {arch}.rope.scaling.type (llama.cpp's default: linear),
// .factor, .original_context_length. Linear scales positions by 1/factor;
// llama3 divides each pair's frequency by rope_freqs.weight (the file's, or
// made here from the factor when the file has none). Returns the factors
// to make, empty when none.
Expected<std::vector<float>> read_rope_scaling(const GgufFile& f, Keys& k, TransformerConfig* c) {
  TS_ASSIGN_OR_RETURN(const std::string type, k.string_or("rope.scaling.type", "linear"));
  float factor = 0.0f;
  TS_TRY(k.positive("rope.scaling.factor", &factor));
  if (factor == 0.0f) TS_TRY(k.positive("rope.scale_linear", &factor));  // the old key
  int32_t original = c->context_length;
  TS_TRY(k.size("rope.scaling.original_context_length", &original));
  if (k.has("rope.scaling.original_context_length")) c->rope_original_context = original;
  k.has("rope.scaling.finetuned");
  c->rope_freq_factors = f.find_tensor("rope_freqs.weight") != nullptr;
  if (type == "none") return std::vector<float>{};
  if (type == "linear") {
    if (factor != 0.0f) c->rope_freq_scale = 1.0f / factor;
    return std::vector<float>{};
  }
  if (type == "llama3") {
    if (c->rope_freq_factors) return std::vector<float>{};  // the converter's factors, as llama.cpp reads them
    if (factor == 0.0f) return f.key_error(k.key("rope.scaling.type"), "is 'llama3' but '" + k.key("rope.scaling.factor") + "' is missing");
    if (original <= 0) return f.key_error(k.key("rope.scaling.original_context_length"), "is 0; expected a positive count");
    float low = 1.0f, high = 4.0f;  // Meta's llama 3.1 values
    TS_TRY(k.positive("rope.scaling.low_freq_factor", &low));
    TS_TRY(k.positive("rope.scaling.high_freq_factor", &high));
    if (!(high > low)) return f.key_error(k.key("rope.scaling.high_freq_factor"), "is not above low_freq_factor");
    c->rope_freq_factors = true;
    return llama3_rope_freq_factors(*c, {factor, low, high, original});
  }
  return f.key_error(k.key("rope.scaling.type"), "is '" + type + "'; supported: none, linear, llama3");
}

Status read_config(const GgufFile& f, TransformerConfig* c, std::vector<float>* made_freq_factors,
                   std::set<std::string>* consumed) {
  consumed->insert("general.architecture");
  TS_ASSIGN_OR_RETURN(const std::string arch_name, f.get_string("general.architecture"));
  const auto arch = arch_from_name(arch_name);
  if (!arch)
    return f.key_error("general.architecture", "is '" + arch_name + "'; supported: " + supported_architectures());
  c->arch = *arch;
  Keys k(f, arch_name, consumed);
  TS_TRY(k.count("embedding_length", -1, &c->dim));
  TS_TRY(k.count("feed_forward_length", -1, &c->hidden_dim));
  TS_TRY(k.count("block_count", -1, &c->n_layers));
  TS_TRY(k.count("attention.head_count", -1, &c->n_heads));
  TS_TRY(k.count("attention.head_count_kv", c->n_heads, &c->n_kv_heads));
  TS_TRY(k.count("context_length", -1, &c->context_length));
  if (k.has("attention.key_length")) TS_TRY(k.count("attention.key_length", -1, &c->key_length));
  if (c->key_length == 0 && c->dim % c->n_heads != 0)
    return invalid_argument(f.path() + ": key '" + k.key("embedding_length") + "' (" + std::to_string(c->dim) +
                            ") is not divisible by '" + k.key("attention.head_count") + "' (" + std::to_string(c->n_heads) + ")");
  if (c->key_length == c->dim / c->n_heads && c->dim % c->n_heads == 0) c->key_length = 0;  // the default, said aloud
  if (k.has("attention.value_length")) {
    int32_t v = 0;
    TS_TRY(k.count("attention.value_length", -1, &v));
    if (v != c->head_dim())
      return f.key_error(k.key("attention.value_length"), "is " + std::to_string(v) + "; only V heads of the K heads' size (" +
                                                             std::to_string(c->head_dim()) + ") are supported");
  }
  if (c->n_heads % c->n_kv_heads != 0)
    return invalid_argument(f.path() + ": key '" + k.key("attention.head_count_kv") + "' (" + std::to_string(c->n_kv_heads) +
                            ") does not divide '" + k.key("attention.head_count") + "' (" + std::to_string(c->n_heads) + ")");
  TS_TRY(k.count("rope.dimension_count", c->head_dim(), &c->rope_dims));
  if (c->rope_dims > c->head_dim() || c->rope_dims % 2 != 0)
    return f.key_error(k.key("rope.dimension_count"), "is " + std::to_string(c->rope_dims) +
                                                        "; expected an even count up to head_dim " + std::to_string(c->head_dim()));
  TS_TRY(k.positive("rope.freq_base", &c->rope_theta));
  TS_TRY(k.positive("attention.layer_norm_rms_epsilon", &c->rms_eps));
  TS_ASSIGN_OR_RETURN(*made_freq_factors, read_rope_scaling(f, k, c));

  // llama.cpp's converter keeps llama's Q/K rows in the adjacent-pair order
  // (rope type NORM); the others rotate the two halves of a head (NEOX).
  c->rope_layout = c->arch == Arch::llama ? RopeLayout::interleaved : RopeLayout::half_split;
  // Optional per-file parts, found by their tensors as llama.cpp does for every architecture.
  c->fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  c->qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c->tied_embeddings = f.find_tensor("output.weight") == nullptr;
  switch (c->arch) {
    case Arch::llama:
      // Mistral: every layer windowed when the file says so.
      TS_TRY(k.size("attention.sliding_window", &c->sliding_window));
      break;
    case Arch::qwen2:  // llama.cpp reads no window for qwen2 or phi3 (its phi3 SWA is disabled): kept, not applied
    case Arch::phi3:
      TS_TRY(k.size("attention.sliding_window", &c->unapplied_sliding_window));
      c->fused_gate_up = c->arch == Arch::phi3;
      break;
    case Arch::qwen3:
      c->qk_norm = true;
      break;
    case Arch::gemma2: {
      c->sliding_window = 4096;  // llama.cpp's default for gemma 2
      TS_TRY(k.size("attention.sliding_window", &c->sliding_window));
      c->sliding_window_pattern = 2;
      TS_TRY(k.size("attention.sliding_window_pattern", &c->sliding_window_pattern));
      c->attn_logit_softcap = 50.0f;
      c->final_logit_softcap = 30.0f;
      TS_TRY(k.positive("attn_logit_softcapping", &c->attn_logit_softcap));
      TS_TRY(k.positive("final_logit_softcapping", &c->final_logit_softcap));
      c->embedding_scale = std::sqrt((float)c->dim);
      // llama.cpp: query_pre_attn_scalar is head_dim, except gemma 2 27B (46 layers) where it is dim / n_heads.
      c->attention_scale = c->n_layers == 46 ? 1.0f / std::sqrt((float)(c->dim / c->n_heads)) : 1.0f / std::sqrt((float)c->head_dim());
      c->ffn_activation = FfnActivation::gelu;
      c->post_norms = true;
      c->tied_embeddings = true;  // llama.cpp's gemma2 always classifies with token_embd
      break;
    }
  }

  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return not_found(f.path() + ": tensor 'token_embd.weight' is missing");
  if (embd->shape.rank != 2)
    return invalid_argument(f.path() + ": tensor 'token_embd.weight': shape " + embd->shape.to_string() +
                            "; expected [vocab_size, " + std::to_string(c->dim) + "]");
  TS_TRY(k.count("vocab_size", embd->shape[0], &c->vocab_size));
  return c->validate(f.path());
}

// What the loader made that the file does not hold (llama3's frequency
// factors when only the keys describe them), kept alive with the mapping.
struct Owned {
  std::shared_ptr<const void> file;
  std::vector<float> freq_factors;
};

}  // namespace

Expected<ModelWeights> load_gguf_model(const std::string& path) {
  TS_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(path));
  ModelWeights m;
  m.source = path;
  m.format = "gguf";
  std::set<std::string> consumed{"general.alignment"};
  auto owned = std::make_shared<Owned>();
  TS_TRY(read_config(f, &m.config, &owned->freq_factors, &consumed));

  for (const auto& t : f.tensors()) m.tensors.push_back({t.name, TensorDesc::contiguous(t.dtype, t.shape), t.data});
  if (!owned->freq_factors.empty()) {
    const auto& ff = owned->freq_factors;
    m.tensors.push_back({"rope_freqs.weight", TensorDesc::contiguous(DType::f32, Shape{(int64_t)ff.size()}),
                         std::as_bytes(std::span<const float>(ff.data(), ff.size()))});
  }
  // gemma2 files may carry an output.weight llama.cpp never reads (it classifies with token_embd).
  std::set<std::string> ignored;
  if (m.config.arch == Arch::gemma2) ignored.insert("output.weight");
  TS_TRY(check_model_tensors(m, ignored));

  TS_ASSIGN_OR_RETURN(m.tokenizer, read_gguf_tokenizer(f, &consumed));
  if (m.tokenizer && m.tokenizer->tokens.size() > (size_t)m.config.vocab_size)
    return f.key_error("tokenizer.ggml.tokens", "has " + std::to_string(m.tokenizer->tokens.size()) +
                                                    " tokens; expected at most vocab_size " +
                                                    std::to_string(m.config.vocab_size));
  for (const auto& kv : f.kvs()) {
    if (kv.key == "tokenizer.chat_template" && kv.value.type == GgufType::string) m.chat_template = kv.value.str;
    if (!consumed.count(kv.key)) m.metadata[kv.key] = kv.value.to_display_string();
  }
  owned->file = f.mapping();
  m.mappings.push_back(f.mapping());
  m.storage = owned;
  return m;
}

}  // namespace tessera
