// Hugging Face folders (config.json + safetensors): the tiny-random folder
// loads to the tensors of its GGUF twin, written by llama.cpp's converter
// (Q/K rows through llama.cpp's permute); sharded folders and F32/BF16
// shards; hand-made safetensors headers and configs that must be refused in
// one line; the tensor-name table of every architecture.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "core/quant.h"
#include "engine/formats/safetensors.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/hf_config.h"
#include "engine/models/hf_loader.h"
#include "engine/models/hf_tensor_names.h"
#include "engine/models/load_model.h"
#include "format_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
const std::string kHfDir = shared_path("models/llama-2-tiny-random-hf");
const std::string kTwin = shared_path("models/llama-2-tiny-random.gguf");

std::vector<float> as_f32(const WeightTensor& t) {
  std::vector<float> out((size_t)t.desc.shape.numel());
  const int64_t n = t.desc.shape.last();
  for (int64_t r = 0; r < t.desc.rows(); ++r)
    dequantize_row(t.desc.dtype, t.data.data() + r * t.desc.row_bytes(), out.data() + r * n, n);
  return out;
}

// llama.cpp's convert_hf_to_gguf.py permute, as the row it reads: GGUF row
// r of head h holds the pair element (r % head_dim) / 2 of half (r % 2).
int64_t hf_row_of_gguf_row(int64_t r, int64_t head_dim) {
  const int64_t h = r / head_dim, k = r % head_dim;
  return h * head_dim + (k % 2) * (head_dim / 2) + k / 2;
}

bool is_qk(const std::string& name) {
  return name.find(".attn_q.weight") != std::string::npos || name.find(".attn_k.weight") != std::string::npos;
}

struct StTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A safetensors file as the format defines it (header padded with spaces to 8 bytes, as the library does).
std::vector<uint8_t> safetensors_bytes(const std::vector<StTensor>& tensors) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t at = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes.size()}}};
    at += t.bytes.size();
  }
  std::string text = h.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  ByteBuilder b;
  b.u64(text.size()).raw(text);
  for (const auto& t : tensors) b.bytes.insert(b.bytes.end(), t.bytes.begin(), t.bytes.end());
  return b.bytes;
}

std::vector<uint8_t> header_only(const std::string& json_text, size_t data_bytes) {
  ByteBuilder b;
  b.u64(json_text.size()).raw(json_text).zeros(data_bytes);
  return b.bytes;
}

Status parse_bytes(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::parse({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "t.safetensors").status();
}

// The tiny model's HF tensors, each re-encoded in `dtype` (F32 or BF16).
std::vector<StTensor> tiny_tensors_as(const std::string& dtype) {
  auto f = SafetensorsFile::open(kHfDir + "/model.safetensors");
  REQUIRE_MESSAGE(f.has_value(), f.status().message());
  std::vector<StTensor> out;
  for (const auto& t : f->tensors()) {
    REQUIRE((t.dtype == "F16" || t.dtype == "F32"));
    StTensor s{t.name, dtype, t.shape, {}};
    const size_t in_bytes = t.dtype == "F16" ? 2 : 4, n = t.data.size() / in_bytes;
    s.bytes.resize(n * (dtype == "F32" ? 4 : 2));
    for (size_t i = 0; i < n; ++i) {
      float v;
      if (in_bytes == 4) {
        std::memcpy(&v, t.data.data() + i * 4, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, t.data.data() + i * 2, 2);
        v = f16_to_f32(h);
      }
      if (dtype == "F32") {
        std::memcpy(s.bytes.data() + i * 4, &v, 4);
      } else {
        const uint16_t b = f32_to_bf16(v);
        std::memcpy(s.bytes.data() + i * 2, &b, 2);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

void copy_config(const TempDir& dir) {
  std::filesystem::copy_file(kHfDir + "/config.json", dir.file("config.json"));
}

// Every tensor of `a` in `b`, same shape, values within `tol` relatively (Q/K rows compared through the permute).
void check_like_twin(const ModelWeights& hf, const ModelWeights& twin, double tol) {
  REQUIRE(hf.tensors.size() == twin.tensors.size());
  const int64_t head_dim = twin.config.head_dim();
  for (const WeightTensor& g : twin.tensors) {
    CAPTURE(g.name);
    const WeightTensor* h = hf.find(g.name);
    REQUIRE(h != nullptr);
    REQUIRE(h->desc.shape == g.desc.shape);
    const std::vector<float> gv = as_f32(g), hv = as_f32(*h);
    const int64_t n = g.desc.shape.last();
    double worst = 0;
    for (int64_t r = 0; r < g.desc.rows(); ++r) {
      const int64_t hr = is_qk(g.name) ? hf_row_of_gguf_row(r, head_dim) : r;
      for (int64_t i = 0; i < n; ++i) {
        const double x = gv[(size_t)(r * n + i)], y = hv[(size_t)(hr * n + i)];
        worst = std::max(worst, std::fabs(x - y) / std::max(std::fabs(x), 1e-6));
      }
    }
    CHECK(worst <= tol);
  }
}
}  // namespace

TEST_CASE("the tiny-random HF folder loads to its GGUF twin's config and tensors, Q/K in half-split order") {
  auto hf = load_hf_model(kHfDir);
  REQUIRE_MESSAGE(hf.has_value(), hf.status().message());
  auto twin = load_gguf_model(kTwin);
  REQUIRE_MESSAGE(twin.has_value(), twin.status().message());
  const TransformerConfig &a = hf->config, &b = twin->config;
  CHECK(a.dim == b.dim);
  CHECK(a.hidden_dim == b.hidden_dim);
  CHECK(a.n_layers == b.n_layers);
  CHECK(a.n_heads == b.n_heads);
  CHECK(a.n_kv_heads == b.n_kv_heads);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.context_length == b.context_length);
  CHECK(a.rope_dims == b.rope_dims);
  CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.rms_eps == b.rms_eps);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.rope_layout == RopeLayout::half_split);
  CHECK(hf->format == "hf");
  check_like_twin(*hf, *twin, 0.0);
  // Norms are f32 as in GGUF; matmul weights stay f16 spans into the mapping.
  CHECK((*hf->require("output_norm.weight", {8}))->desc.dtype == DType::f32);
  CHECK((*hf->require("blk.0.attn_q.weight", {8, 8}))->desc.dtype == DType::f16);
  CHECK_FALSE(hf->tokenizer.has_value());  // the folder has no tokenizer.json
}

TEST_CASE("a sharded HF folder (index + one F32 and one BF16 shard) loads to the same tensors") {
  TempDir dir;
  copy_config(dir);
  const auto f32 = tiny_tensors_as("F32"), bf16 = tiny_tensors_as("BF16");
  std::vector<StTensor> first, second;
  nlohmann::json map = nlohmann::json::object();
  for (size_t i = 0; i < f32.size(); ++i) {
    // The embedding in BF16, the rest in F32.
    const bool big = f32[i].name == "model.embed_tokens.weight";
    (big ? second : first).push_back(big ? bf16[i] : f32[i]);
    map[f32[i].name] = big ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  write_bytes(dir.file("model-00001-of-00002.safetensors"), safetensors_bytes(first));
  write_bytes(dir.file("model-00002-of-00002.safetensors"), safetensors_bytes(second));
  std::ofstream(dir.file("model.safetensors.index.json")) << nlohmann::json{{"metadata", {}}, {"weight_map", map}}.dump();
  auto hf = load_hf_model(dir.file(""));
  REQUIRE_MESSAGE(hf.has_value(), hf.status().message());
  auto twin = load_gguf_model(kTwin);
  REQUIRE(twin.has_value());
  CHECK((*hf->require("token_embd.weight", {32000, 8}))->desc.dtype == DType::bf16);
  CHECK((*hf->require("blk.0.ffn_up.weight", {32, 8}))->desc.dtype == DType::f32);
  check_like_twin(*hf, *twin, 1.0 / 128);  // bf16 keeps 8 significant bits

  // An index naming a tensor its shard lacks, and a shard outside the folder, are refused.
  map["model.norm.weight"] = "model-00002-of-00002.safetensors";
  std::ofstream(dir.file("model.safetensors.index.json")) << nlohmann::json{{"weight_map", map}}.dump();
  check_message(load_hf_model(dir.file("")).status(), {"model-00002-of-00002.safetensors", "'model.norm.weight' is missing"});
  map["model.norm.weight"] = "../elsewhere.safetensors";
  std::ofstream(dir.file("model.safetensors.index.json")) << nlohmann::json{{"weight_map", map}}.dump();
  check_message(load_hf_model(dir.file("")).status(), {"model.safetensors.index.json", "../elsewhere.safetensors", "same folder"});
}

TEST_CASE("safetensors headers that lie about sizes or offsets are refused in one line") {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  CHECK(parse_bytes(header_only(ok, 16)).is_ok());
  check_message(parse_bytes({1, 2, 3}), {"t.safetensors", "8-byte header length"});
  ByteBuilder huge;
  huge.u64(1ull << 40).raw("{}");
  check_message(parse_bytes(huge.bytes), {"header length 1099511627776"});
  check_message(parse_bytes(header_only("[1,2]", 0)), {"not a JSON object"});
  check_message(parse_bytes(header_only(ok, 8)), {"tensor 'a'", "[0, 16)", "data section of 8 bytes"});
  check_message(parse_bytes(header_only(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", 16)),
                {"tensor 'a'", "hold 16 bytes", "needs 24"});
  check_message(parse_bytes(header_only(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                        R"("b":{"dtype":"F16","shape":[4],"data_offsets":[4,12]}})", 16)),
                {"'a' [0, 8)", "'b' [4, 12)", "overlap"});
  check_message(parse_bytes(header_only(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8)),
                {"dtype 'Q4' is not a safetensors dtype"});
  check_message(parse_bytes(header_only(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
                {"tensor 'a'", "shape"});
  check_message(parse_bytes(header_only(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", 8)),
                {"overflows"});
  check_message(parse_bytes(header_only(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)), {"[8, 0)"});
}

TEST_CASE("an HF folder with an I32 tensor, an unknown model_type or no weights is refused in one line") {
  TempDir dir;
  check_message(load_model(dir.file("")).status(), {"has no config.json", "Hugging Face model folder"});
  copy_config(dir);
  check_message(load_model(dir.file("")).status(), {"model.safetensors", "safetensors"});
  auto tensors = tiny_tensors_as("F32");
  tensors[0].dtype = "I32";
  write_bytes(dir.file("model.safetensors"), safetensors_bytes(tensors));
  check_message(load_hf_model(dir.file("")).status(), {"tensor '" + tensors[0].name + "'", "dtype I32", "F32, F16 or BF16"});

  auto config_error = [](const std::string& text) { return parse_hf_config(text, "config.json").status(); };
  check_message(config_error(R"({"model_type":"qwen2","hidden_size":8})"), {"model_type 'qwen2'", "supported: llama, mistral"});
  check_message(config_error(R"({"model_type":"bert"})"), {"model_type 'bert'", "supported: llama, mistral"});
  check_message(config_error(R"({"hidden_size":8})"), {"model_type", "missing"});
  const std::string base = R"("model_type":"llama","hidden_size":8,"intermediate_size":32,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":10)";
  CHECK(parse_hf_config("{" + base + "}", "config.json").has_value());
  check_message(config_error("{" + base + R"(,"num_key_value_heads":3})"), {"config.json", "n_kv_heads"});
  check_message(config_error("{" + base + R"(,"rope_scaling":{"type":"llama3"}})"), {"rope_scaling", "not supported"});
  check_message(config_error("{" + base + R"(,"hidden_act":"gelu"})"), {"hidden_act", "silu"});
  check_message(config_error(R"({"model_type":"llama","hidden_size":-8})"), {"hidden_size", "positive"});
  // Mistral's sliding window caps the context (full attention is the same within it).
  auto mistral = parse_hf_config(R"({"model_type":"mistral","hidden_size":8,"intermediate_size":32,"num_hidden_layers":1,)"
                                 R"("num_attention_heads":2,"vocab_size":10,"max_position_embeddings":32768,"sliding_window":4096})",
                                 "config.json");
  REQUIRE(mistral.has_value());
  CHECK(mistral->llama.context_length == 4096);
  CHECK(mistral->notes.size() == 1);
}

TEST_CASE("HF tensor names map to llama.cpp's GGUF names, one table row per name and architecture") {
  auto gguf = [](const char* type, const char* hf) -> std::string {
    const HfArchitecture* a = find_hf_architecture(type);
    REQUIRE(a != nullptr);
    const auto m = map_hf_tensor_name(*a, hf);
    return m ? m->gguf : "(none)";
  };
  CHECK(gguf("llama", "model.layers.12.self_attn.q_proj.weight") == "blk.12.attn_q.weight");
  CHECK(gguf("llama", "model.layers.0.post_attention_layernorm.weight") == "blk.0.ffn_norm.weight");
  CHECK(gguf("llama", "model.embed_tokens.weight") == "token_embd.weight");
  CHECK(gguf("llama", "lm_head.weight") == "output.weight");
  CHECK(gguf("llama", "model.norm.weight") == "output_norm.weight");
  CHECK(gguf("mistral", "model.layers.3.mlp.down_proj.weight") == "blk.3.ffn_down.weight");
  CHECK(gguf("llama", "model.layers.0.self_attn.q_proj.bias") == "(none)");
  CHECK(gguf("llama", "model.layers.x.self_attn.q_proj.weight") == "(none)");
  CHECK(gguf("llama", "model.layers.01.self_attn.q_proj.weight") == "(none)");
  CHECK(gguf("qwen2", "model.layers.1.self_attn.k_proj.bias") == "blk.1.attn_k.bias");
  CHECK(gguf("qwen3", "model.layers.1.self_attn.q_norm.weight") == "blk.1.attn_q_norm.weight");
  CHECK(gguf("gemma2", "model.layers.2.post_attention_layernorm.weight") == "blk.2.post_attention_norm.weight");
  CHECK(gguf("gemma2", "model.layers.2.pre_feedforward_layernorm.weight") == "blk.2.ffn_norm.weight");
  CHECK(gguf("gemma2", "model.layers.2.post_feedforward_layernorm.weight") == "blk.2.post_ffw_norm.weight");
  CHECK(map_hf_tensor_name(*find_hf_architecture("gemma2"), "model.norm.weight")->transform == HfTransform::add_one);
  CHECK(map_hf_tensor_name(*find_hf_architecture("llama"), "model.norm.weight")->transform == HfTransform::none);
  CHECK(gguf("phi3", "model.layers.0.self_attn.qkv_proj.weight") == "blk.0.attn_qkv.weight");
  CHECK(gguf("phi3", "model.layers.0.mlp.gate_up_proj.weight") == "blk.0.ffn_up.weight");
  CHECK(find_hf_architecture("bert") == nullptr);
  CHECK(hf_architecture_names() == "llama, mistral, qwen2, qwen3, gemma2, phi3");
}
