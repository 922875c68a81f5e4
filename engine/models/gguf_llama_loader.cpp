#include "engine/models/gguf_llama_loader.h"

#include <set>

#include "engine/formats/gguf.h"
#include "engine/models/gguf_tokenizer.h"

namespace tessera {

namespace {
// Reads a positive int32 count; `fallback` (when >= 0) is used if the key is absent.
Status read_count(const GgufFile& f, const char* key, int64_t fallback, int32_t* out,
                  std::set<std::string>* consumed) {
  consumed->insert(key);
  if (!f.has(key)) {
    if (fallback < 0) return not_found(f.path() + ": key '" + key + "' is missing");
    if (fallback == 0 || fallback > INT32_MAX)
      return invalid_argument(f.path() + ": key '" + key + "' is missing and its default " + std::to_string(fallback) +
                              " is not a positive count below 2^31");
    *out = (int32_t)fallback;
    return Status::ok();
  }
  TS_ASSIGN_OR_RETURN(const uint64_t v, f.get_uint(key));
  if (v == 0 || v > (uint64_t)INT32_MAX)
    return f.key_error(key, "is " + std::to_string(v) + "; expected a positive count below 2^31");
  *out = (int32_t)v;
  return Status::ok();
}

Status read_float(const GgufFile& f, const char* key, float* out, std::set<std::string>* consumed) {
  consumed->insert(key);
  if (!f.has(key)) return Status::ok();
  TS_ASSIGN_OR_RETURN(const double v, f.get_float(key));
  if (!(v > 0.0) || v > 1e30) return f.key_error(key, "is " + std::to_string(v) + "; expected a positive number");
  *out = (float)v;
  return Status::ok();
}

Status read_config(const GgufFile& f, LlamaConfig* c, std::set<std::string>* consumed) {
  consumed->insert("general.architecture");
  TS_ASSIGN_OR_RETURN(const std::string arch, f.get_string("general.architecture"));
  if (arch != "llama") return f.key_error("general.architecture", "is '" + arch + "'; expected 'llama'");
  TS_TRY(read_count(f, "llama.embedding_length", -1, &c->dim, consumed));
  TS_TRY(read_count(f, "llama.feed_forward_length", -1, &c->hidden_dim, consumed));
  TS_TRY(read_count(f, "llama.block_count", -1, &c->n_layers, consumed));
  TS_TRY(read_count(f, "llama.attention.head_count", -1, &c->n_heads, consumed));
  TS_TRY(read_count(f, "llama.attention.head_count_kv", c->n_heads, &c->n_kv_heads, consumed));
  TS_TRY(read_count(f, "llama.context_length", -1, &c->context_length, consumed));
  if (c->dim % c->n_heads != 0)
    return invalid_argument(f.path() + ": key 'llama.embedding_length' (" + std::to_string(c->dim) +
                            ") is not divisible by 'llama.attention.head_count' (" + std::to_string(c->n_heads) + ")");
  if (c->n_heads % c->n_kv_heads != 0)
    return invalid_argument(f.path() + ": key 'llama.attention.head_count_kv' (" + std::to_string(c->n_kv_heads) +
                            ") does not divide 'llama.attention.head_count' (" + std::to_string(c->n_heads) + ")");
  TS_TRY(read_count(f, "llama.rope.dimension_count", c->head_dim(), &c->rope_dims, consumed));
  if (c->rope_dims > c->head_dim() || c->rope_dims % 2 != 0)
    return f.key_error("llama.rope.dimension_count", "is " + std::to_string(c->rope_dims) +
                                                         "; expected an even count up to head_dim " +
                                                         std::to_string(c->head_dim()));
  TS_TRY(read_float(f, "llama.rope.freq_base", &c->rope_theta, consumed));
  TS_TRY(read_float(f, "llama.attention.layer_norm_rms_epsilon", &c->rms_eps, consumed));
  // GGUF llama files keep Q/K rows in the adjacent-pair order run.c rotates.
  c->rope_layout = RopeLayout::interleaved;
  c->tied_embeddings = f.find_tensor("output.weight") == nullptr;

  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return not_found(f.path() + ": tensor 'token_embd.weight' is missing");
  if (embd->shape.rank != 2)
    return invalid_argument(f.path() + ": tensor 'token_embd.weight': shape " + embd->shape.to_string() +
                            "; expected [vocab_size, " + std::to_string(c->dim) + "]");
  TS_TRY(read_count(f, "llama.vocab_size", embd->shape[0], &c->vocab_size, consumed));
  return c->validate(f.path());
}

Status check_tensors(const ModelWeights& m) {
  const LlamaConfig& c = m.config;
  const int64_t dim = c.dim, hidden = c.hidden_dim, vocab = c.vocab_size;
  const int64_t q_dim = (int64_t)c.head_dim() * c.n_heads, kv_dim = c.kv_dim();
  auto need = [&](const std::string& name, const Shape& shape) { return m.require(name, shape).status(); };
  TS_TRY(need("token_embd.weight", {vocab, dim}));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    TS_TRY(need(p + "attn_norm.weight", {dim}));
    TS_TRY(need(p + "attn_q.weight", {q_dim, dim}));
    TS_TRY(need(p + "attn_k.weight", {kv_dim, dim}));
    TS_TRY(need(p + "attn_v.weight", {kv_dim, dim}));
    TS_TRY(need(p + "attn_output.weight", {dim, q_dim}));
    TS_TRY(need(p + "ffn_norm.weight", {dim}));
    TS_TRY(need(p + "ffn_gate.weight", {hidden, dim}));
    TS_TRY(need(p + "ffn_up.weight", {hidden, dim}));
    TS_TRY(need(p + "ffn_down.weight", {dim, hidden}));
  }
  TS_TRY(need("output_norm.weight", {dim}));
  if (!c.tied_embeddings) TS_TRY(need("output.weight", {vocab, dim}));
  return Status::ok();
}
}  // namespace

Expected<ModelWeights> load_gguf_llama(const std::string& path) {
  TS_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(path));
  ModelWeights m;
  m.source = path;
  m.format = "gguf";
  std::set<std::string> consumed{"general.alignment"};
  TS_TRY(read_config(f, &m.config, &consumed));

  for (const auto& t : f.tensors()) m.tensors.push_back({t.name, TensorDesc::contiguous(t.dtype, t.shape), t.data});
  TS_TRY(check_tensors(m));

  TS_ASSIGN_OR_RETURN(m.tokenizer, read_gguf_tokenizer(f, &consumed));
  if (m.tokenizer && m.tokenizer->tokens.size() > (size_t)m.config.vocab_size)
    return f.key_error("tokenizer.ggml.tokens", "has " + std::to_string(m.tokenizer->tokens.size()) +
                                                    " tokens; expected at most vocab_size " +
                                                    std::to_string(m.config.vocab_size));
  for (const auto& kv : f.kvs()) {
    if (kv.key == "tokenizer.chat_template" && kv.value.type == GgufType::string) m.chat_template = kv.value.str;
    if (!consumed.count(kv.key)) m.metadata[kv.key] = kv.value.to_display_string();
  }
  m.storage = f.mapping();
  return m;
}

}  // namespace tessera
