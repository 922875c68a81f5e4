#pragma once
// A GGUF model written back as a Hugging Face folder: llama.cpp's
// convert_hf_to_gguf.py run backwards, stated here on its own (it reads the
// GGUF with the GGUF reader only, never the HF loader's tables), so that a
// folder it writes checks the loader against an independent oracle.
//
// config.json has the keys of transformers' config class for the model_type
// (LlamaConfig, Qwen2Config, Qwen3Config, Gemma2Config, Phi3Config), valued
// from the file's {arch}.* keys; the safetensors hold transformers' tensor
// names, [out, in] row-major as PyTorch keeps them, with the converter's
// transforms undone: llama's Q and K rows back from GGUF's interleaved RoPE
// pairs to HF's half-split order (the inverse of its `permute`), and
// Gemma 2's norm weights minus the one its `modify_tensors` added. phi3's
// fused qkv_proj and gate_up_proj are GGUF's attn_qkv and ffn_up as they are.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/half.h"
#include "engine/formats/gguf.h"

namespace tessera::testing {

struct HfExportOptions {
  std::string dtype = "F32";  // every tensor's safetensors dtype: F32, F16 or BF16
  int shards = 1;             // > 1: model-0000i-of-0000n.safetensors and model.safetensors.index.json
  // Merged over the config.json written (e.g. a rope_scaling, layer_types).
  nlohmann::json config_overrides = nlohmann::json::object();
};

namespace hf_export_detail {

inline uint64_t key_uint(const GgufFile& g, const std::string& key, uint64_t fallback) {
  const auto v = g.get_uint(key);
  return v ? *v : fallback;
}
inline double key_float(const GgufFile& g, const std::string& key, double fallback) {
  const auto v = g.get_float(key);
  return v ? *v : fallback;
}

// GGUF name → transformers' name for `arch` (empty: not a checkpoint tensor).
inline std::string hf_name_of(const std::string& arch, const std::string& gguf) {
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return arch == "gemma2" ? "" : "lm_head.weight";  // Gemma 2 checkpoints are tied
  if (gguf == "rope_freqs.weight") return "";  // made by the converter from rope_scaling
  REQUIRE_MESSAGE(gguf.rfind("blk.", 0) == 0, "no HF name for " << gguf);
  const size_t dot = gguf.find('.', 4);
  const std::string layer = gguf.substr(4, dot - 4), part = gguf.substr(dot + 1);
  const std::map<std::string, std::string> names = {
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_qkv.weight", "self_attn.qkv_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"attn_norm.weight", "input_layernorm.weight"},
      {"ffn_norm.weight", arch == "gemma2" ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight"},
      {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", arch == "phi3" ? "mlp.gate_up_proj.weight" : "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  const auto it = names.find(part);
  REQUIRE_MESSAGE(it != names.end(), "no HF name for " << gguf);
  return "model.layers." + layer + "." + it->second;
}

// config.json as transformers' config class for the architecture writes it.
inline nlohmann::json config_of(const GgufFile& g, const std::string& arch, const std::string& torch_dtype) {
  const std::string a = arch + ".";
  const uint64_t dim = *g.get_uint(a + "embedding_length"), heads = *g.get_uint(a + "attention.head_count");
  const uint64_t head_dim = key_uint(g, a + "attention.key_length", dim / heads);
  const uint64_t layers = *g.get_uint(a + "block_count");
  const uint64_t vocab = key_uint(g, a + "vocab_size", g.find_tensor("token_embd.weight")->shape[0]);
  const bool tied = g.find_tensor("output.weight") == nullptr || arch == "gemma2";
  static const std::map<std::string, std::string> classes = {{"llama", "LlamaForCausalLM"},
                                                             {"qwen2", "Qwen2ForCausalLM"},
                                                             {"qwen3", "Qwen3ForCausalLM"},
                                                             {"gemma2", "Gemma2ForCausalLM"},
                                                             {"phi3", "Phi3ForCausalLM"}};
  nlohmann::json c = {
      {"architectures", {classes.at(arch)}},
      {"model_type", arch},
      {"hidden_size", dim},
      {"intermediate_size", *g.get_uint(a + "feed_forward_length")},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", key_uint(g, a + "attention.head_count_kv", heads)},
      {"max_position_embeddings", *g.get_uint(a + "context_length")},
      // The f32 the file holds, as a double: it parses back to the same f32.
      {"rms_norm_eps", key_float(g, a + "attention.layer_norm_rms_epsilon", 1e-5)},
      {"rope_theta", key_float(g, a + "rope.freq_base", 10000.0)},
      {"vocab_size", vocab},
      {"tie_word_embeddings", tied},
      {"torch_dtype", torch_dtype},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
      {"rope_scaling", nullptr},
      {"attention_dropout", 0.0},
      {"initializer_range", 0.02},
      {"use_cache", true},
      {"transformers_version", "4.46.0"},
  };
  if (arch == "llama") {
    c.update({{"hidden_act", "silu"}, {"attention_bias", false}, {"mlp_bias", false}, {"head_dim", head_dim},
              {"pretraining_tp", 1}});
  } else if (arch == "qwen2") {
    c.update({{"hidden_act", "silu"}, {"use_sliding_window", false}, {"sliding_window", 4096}, {"max_window_layers", layers}});
  } else if (arch == "qwen3") {
    c.update({{"hidden_act", "silu"}, {"head_dim", head_dim}, {"attention_bias", false}, {"use_sliding_window", false},
              {"sliding_window", nullptr}, {"max_window_layers", layers}});
  } else if (arch == "gemma2") {
    c.update({{"hidden_act", "gelu_pytorch_tanh"},
              {"hidden_activation", "gelu_pytorch_tanh"},
              {"head_dim", head_dim},
              // llama.cpp's rule for the score scale, which the GGUF cannot state: head_dim but for the 27B.
              {"query_pre_attn_scalar", layers == 46 ? dim / heads : head_dim},
              {"attn_logit_softcapping", key_float(g, a + "attn_logit_softcapping", 50.0)},
              {"final_logit_softcapping", key_float(g, a + "final_logit_softcapping", 30.0)},
              {"sliding_window", key_uint(g, a + "attention.sliding_window", 4096)},
              {"attention_bias", false},
              {"cache_implementation", "hybrid"}});
  } else if (arch == "phi3") {
    const uint64_t rope_dims = key_uint(g, a + "rope.dimension_count", head_dim);
    c.update({{"hidden_act", "silu"}, {"partial_rotary_factor", (double)(rope_dims * heads) / (double)dim},
              {"sliding_window", nullptr}, {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}});
    if (g.has(a + "attention.sliding_window")) c["sliding_window"] = *g.get_uint(a + "attention.sliding_window");
    if (g.has(a + "rope.scaling.original_context_length"))
      c["original_max_position_embeddings"] = *g.get_uint(a + "rope.scaling.original_context_length");
  }
  return c;
}

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// The tensor's f32 values with the converter's transform undone.
inline Tensor hf_tensor_of(const GgufFile& g, const std::string& arch, const GgufTensorInfo& t) {
  REQUIRE_MESSAGE(t.dtype == DType::f32, t.name << ": the exporter reads f32 files only");
  Tensor out{hf_name_of(arch, t.name), {}, std::vector<float>((size_t)t.shape.numel())};
  for (int d = 0; d < t.shape.rank; ++d) out.shape.push_back(t.shape[d]);
  std::memcpy(out.values.data(), t.data.data(), out.values.size() * sizeof(float));
  const bool q = t.name.find(".attn_q.weight") != std::string::npos, k = t.name.find(".attn_k.weight") != std::string::npos;
  if (arch == "llama" && (q || k)) {
    // convert_hf_to_gguf.py's permute made GGUF row h*hd + 2i + j from HF row h*hd + j*hd/2 + i.
    const std::string a = arch + ".";
    const int64_t dim = (int64_t)*g.get_uint(a + "embedding_length"), heads = (int64_t)*g.get_uint(a + "attention.head_count");
    const int64_t hd = (int64_t)key_uint(g, a + "attention.key_length", (uint64_t)(dim / heads));
    const int64_t cols = t.shape.last(), rows = t.shape[0];
    std::vector<float> hf(out.values.size());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t h = r / hd, i = (r % hd) / 2, j = r % 2;
      const int64_t hf_row = h * hd + j * (hd / 2) + i;
      std::memcpy(&hf[(size_t)(hf_row * cols)], &out.values[(size_t)(r * cols)], (size_t)cols * sizeof(float));
    }
    out.values = std::move(hf);
  }
  if (arch == "gemma2" && t.name.find("norm.weight") != std::string::npos) {
    // Gemma's RMSNorm scales by 1 + w; the converter stored 1 + w. Each w here is
    // within [0.5, 2] of 1, so w - 1 is exact and adding 1 gives w back bit for bit.
    for (float& v : out.values) {
      const float w = v - 1.0f;
      REQUIRE_MESSAGE(w + 1.0f == v, t.name << ": " << v << " - 1 is not exact in f32");
      v = w;
    }
  }
  return out;
}

inline std::vector<uint8_t> encode(const std::vector<float>& v, const std::string& dtype) {
  std::vector<uint8_t> out(v.size() * (dtype == "F32" ? 4 : 2));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == "F32") {
      std::memcpy(&out[i * 4], &v[i], 4);
    } else {
      const uint16_t h = dtype == "F16" ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

// One safetensors file: the header (padded with spaces to 8 bytes, as the library pads it), then the data.
inline void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors, const std::string& dtype) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  h["__metadata__"] = {{"format", "pt"}};
  std::vector<std::vector<uint8_t>> data;
  uint64_t at = 0;
  for (const Tensor& t : tensors) {
    data.push_back(encode(t.values, dtype));
    h[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {at, at + data.back().size()}}};
    at += data.back().size();
  }
  std::string text = h.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = text.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(text.data(), (std::streamsize)text.size());
  for (const auto& d : data) f.write(reinterpret_cast<const char*>(d.data()), (std::streamsize)d.size());
  REQUIRE_MESSAGE(f.good(), "cannot write " << path);
}

}  // namespace hf_export_detail

// Writes `gguf` (an f32 file of llama, qwen2, qwen3, gemma2 or phi3) as a
// Hugging Face folder in `dir` (created); returns the config.json written.
inline nlohmann::json export_hf_folder(const std::string& gguf, const std::string& dir, const HfExportOptions& o = {}) {
  using namespace hf_export_detail;
  const auto g = GgufFile::open(gguf);
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  const std::string arch = *g->get_string("general.architecture");
  std::filesystem::create_directories(dir);
  const std::string torch_dtype = o.dtype == "F32" ? "float32" : o.dtype == "F16" ? "float16" : "bfloat16";
  nlohmann::json config = config_of(*g, arch, torch_dtype);
  config.update(o.config_overrides);
  std::ofstream(dir + "/config.json") << config.dump(2);

  std::vector<Tensor> tensors;
  for (const GgufTensorInfo& t : g->tensors()) {
    Tensor hf = hf_tensor_of(*g, arch, t);
    if (!hf.name.empty()) tensors.push_back(std::move(hf));
  }
  if (o.shards <= 1) {
    write_safetensors(dir + "/model.safetensors", tensors, o.dtype);
    return config;
  }
  // Consecutive runs of tensors, one run per shard, as transformers' save_pretrained splits them.
  nlohmann::json weight_map = nlohmann::json::object();
  const size_t per = (tensors.size() + (size_t)o.shards - 1) / (size_t)o.shards;
  uint64_t total = 0;
  for (int s = 0; s < o.shards; ++s) {
    char file[64];
    std::snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, o.shards);
    const size_t begin = std::min(tensors.size(), (size_t)s * per), end = std::min(tensors.size(), begin + per);
    const std::vector<Tensor> part(tensors.begin() + (std::ptrdiff_t)begin, tensors.begin() + (std::ptrdiff_t)end);
    for (const Tensor& t : part) {
      weight_map[t.name] = file;
      total += t.values.size() * (o.dtype == "F32" ? 4 : 2);
    }
    write_safetensors(dir + "/" + file, part, o.dtype);
  }
  std::ofstream(dir + "/model.safetensors.index.json")
      << nlohmann::json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2);
  return config;
}

}  // namespace tessera::testing
