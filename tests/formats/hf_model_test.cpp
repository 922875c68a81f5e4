// Hugging Face folders (config.json + safetensors): the tiny-random folder
// loads to the tensors of its GGUF twin, written by llama.cpp's converter
// (Q/K rows through llama.cpp's permute); sharded folders and F32/BF16
// shards; hand-made safetensors headers and configs that must be refused in
// one line; the tensor-name table of every architecture; the zoo's f32 GGUF
// files of every architecture, exported as HF folders by the test's own
// inverse of llama.cpp's converter (support/hf_export.h), load to the GGUF
// loader's config and tensors; each architecture's config.json fields.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "core/quant.h"
#include "engine/formats/convert.h"
#include "engine/formats/safetensors.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/hf_config.h"
#include "engine/models/hf_loader.h"
#include "engine/models/hf_tensor_names.h"
#include "engine/models/load_model.h"
#include "format_test_util.h"
#include "support/hf_export.h"

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

TEST_CASE("an HF folder with an I32 tensor, an unknown model_type, an unsupported rope_scaling or no weights is refused in one line") {
  TempDir dir;
  check_message(load_model(dir.file("")).status(), {"has no config.json", "Hugging Face model folder"});
  copy_config(dir);
  check_message(load_model(dir.file("")).status(), {"model.safetensors", "safetensors"});
  auto tensors = tiny_tensors_as("F32");
  tensors[0].dtype = "I32";
  write_bytes(dir.file("model.safetensors"), safetensors_bytes(tensors));
  check_message(load_hf_model(dir.file("")).status(), {"tensor '" + tensors[0].name + "'", "dtype I32", "F32, F16 or BF16"});

  auto config_error = [](const std::string& text) { return parse_hf_config(text, "config.json").status(); };
  const std::string all = "supported: llama, mistral, qwen2, qwen3, gemma2, phi3";
  check_message(config_error(R"({"model_type":"bert"})"), {"key 'model_type'", "'bert'", all});
  check_message(config_error(R"({"model_type":"gemma3","hidden_size":8})"), {"key 'model_type'", "'gemma3'", all});
  check_message(config_error(R"({"hidden_size":8})"), {"model_type", "missing", all});
  const std::string base = R"("model_type":"llama","hidden_size":8,"intermediate_size":32,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":10)";
  CHECK(parse_hf_config("{" + base + "}", "config.json").has_value());
  check_message(config_error("{" + base + R"(,"num_key_value_heads":3})"), {"config.json", "n_kv_heads"});
  check_message(config_error("{" + base + R"(,"hidden_act":"gelu"})"), {"hidden_act", "silu"});
  check_message(config_error("{" + base + R"(,"attention_bias":true})"), {"attention_bias", "expected false"});
  check_message(config_error(R"({"model_type":"llama","hidden_size":-8})"), {"hidden_size", "positive"});
  // RoPE scalings neither path can compute: one line naming the key and listing what is supported.
  const std::string rope_supported = "supported: default, linear, llama3 (llama and mistral only)";
  for (const char* type : {"yarn", "dynamic", "longrope", "su"}) {
    CAPTURE(type);
    check_message(config_error("{" + base + R"(,"rope_scaling":{"rope_type":")" + type + R"(","factor":4.0}})"),
                  {"config.json", "key 'rope_scaling'", "'" + std::string(type) + "'", rope_supported});
  }
  check_message(config_error("{" + base + R"(,"rope_scaling":{"type":"yarn","factor":4.0}})"), {"rope_scaling", "'yarn'", rope_supported});
  check_message(config_error("{" + base + R"(,"rope_parameters":{"rope_type":"yarn","rope_theta":1e6}})"),
                {"key 'rope_parameters'", "'yarn'", rope_supported});
  const std::string qwen2 = R"("model_type":"qwen2","hidden_size":8,"intermediate_size":32,"num_hidden_layers":2,"num_attention_heads":2,"vocab_size":10)";
  check_message(config_error("{" + qwen2 + R"(,"rope_scaling":{"rope_type":"llama3","factor":8.0}})"),
                {"rope_scaling", "'llama3' for model_type qwen2", rope_supported});
  check_message(config_error("{" + base + R"(,"rope_scaling":{"rope_type":"linear"}})"), {"rope_scaling", "linear", "no factor"});
  // Mistral windows every layer; the context stays max_position_embeddings.
  auto mistral = parse_hf_config(R"({"model_type":"mistral","hidden_size":8,"intermediate_size":32,"num_hidden_layers":1,)"
                                 R"("num_attention_heads":2,"vocab_size":10,"max_position_embeddings":32768,"sliding_window":4096})",
                                 "config.json");
  REQUIRE(mistral.has_value());
  CHECK(mistral->config.context_length == 32768);
  CHECK(mistral->config.sliding_window == 4096);
  CHECK(mistral->config.layer_window(0) == 4096);
  CHECK(mistral->notes.empty());
  auto no_window = parse_hf_config(R"({"model_type":"mistral","hidden_size":8,"intermediate_size":32,"num_hidden_layers":1,)"
                                   R"("num_attention_heads":2,"vocab_size":10,"sliding_window":null})",
                                   "config.json");
  REQUIRE(no_window.has_value());
  CHECK(no_window->config.sliding_window == 0);
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

namespace {
// Every field the graph reads, stated one by one (not through the code's own first_difference).
void check_same_config(const TransformerConfig& hf, const TransformerConfig& gguf) {
  CHECK(hf.arch == gguf.arch);
  CHECK(hf.dim == gguf.dim);
  CHECK(hf.hidden_dim == gguf.hidden_dim);
  CHECK(hf.n_layers == gguf.n_layers);
  CHECK(hf.n_heads == gguf.n_heads);
  CHECK(hf.n_kv_heads == gguf.n_kv_heads);
  CHECK(hf.vocab_size == gguf.vocab_size);
  CHECK(hf.context_length == gguf.context_length);
  CHECK(hf.head_dim() == gguf.head_dim());
  CHECK(hf.rope_dims == gguf.rope_dims);
  CHECK(hf.rope_theta == gguf.rope_theta);
  CHECK(hf.rms_eps == gguf.rms_eps);
  CHECK(hf.tied_embeddings == gguf.tied_embeddings);
  CHECK(hf.rope_freq_scale == gguf.rope_freq_scale);
  CHECK(hf.rope_freq_factors == gguf.rope_freq_factors);
  CHECK(hf.rope_original_context == gguf.rope_original_context);
  CHECK(hf.sliding_window == gguf.sliding_window);
  CHECK(hf.sliding_window_pattern == gguf.sliding_window_pattern);
  CHECK(hf.unapplied_sliding_window == gguf.unapplied_sliding_window);
  CHECK(hf.attn_logit_softcap == gguf.attn_logit_softcap);
  CHECK(hf.final_logit_softcap == gguf.final_logit_softcap);
  CHECK(hf.attention_scale == gguf.attention_scale);
  CHECK(hf.embedding_scale == gguf.embedding_scale);
  CHECK(hf.ffn_activation == gguf.ffn_activation);
  CHECK(hf.qkv_bias == gguf.qkv_bias);
  CHECK(hf.qk_norm == gguf.qk_norm);
  CHECK(hf.post_norms == gguf.post_norms);
  CHECK(hf.fused_qkv == gguf.fused_qkv);
  CHECK(hf.fused_gate_up == gguf.fused_gate_up);
  // HF keeps half-split RoPE rows; GGUF too but for llama (interleaved), whose rows convert permutes.
  CHECK(hf.rope_layout == RopeLayout::half_split);
  CHECK(gguf.rope_layout == (gguf.arch == Arch::llama ? RopeLayout::interleaved : RopeLayout::half_split));
}

const char* const kZooArchs[] = {"llama", "qwen2", "qwen3", "gemma2", "phi3"};

std::string zoo_gguf(const std::string& arch) { return shared_path("models/zoo/" + arch + "-f32.gguf"); }

ModelWeights load_ok(Expected<ModelWeights> m) {
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return std::move(*m);
}

// The first error of parse_hf_config on the zoo file's exported config.json with `changes` merged in.
Expected<HfConfig> parse_changed(const std::string& arch, const nlohmann::json& changes) {
  TempDir dir;
  HfExportOptions o;
  o.config_overrides = changes;
  const nlohmann::json config = export_hf_folder(zoo_gguf(arch), dir.file("m"), o);
  return parse_hf_config(config.dump(), "config.json");
}
}  // namespace

TEST_CASE("each zoo architecture exported as an HF folder loads to the GGUF loader's config and tensors") {
  for (const char* arch : kZooArchs) {
    CAPTURE(std::string(arch));
    TempDir dir;
    export_hf_folder(zoo_gguf(arch), dir.file("m"));
    const ModelWeights hf = load_ok(load_hf_model(dir.file("m")));
    const ModelWeights gguf = load_ok(load_gguf_model(zoo_gguf(arch)));
    check_same_config(hf.config, gguf.config);
    CHECK(hf.metadata.at("hf.model_type") == arch);
    // Every tensor by name and shape, f32 values equal bit for bit (llama's Q/K rows through llama.cpp's permute).
    REQUIRE(hf.tensors.size() == gguf.tensors.size());
    for (const WeightTensor& g : gguf.tensors) {
      CAPTURE(g.name);
      const WeightTensor* h = hf.find(g.name);
      REQUIRE(h != nullptr);
      REQUIRE(h->desc.shape == g.desc.shape);
      CHECK(h->desc.dtype == DType::f32);
      const std::vector<float> gv = as_f32(g), hv = as_f32(*h);
      const int64_t n = g.desc.shape.last();
      const bool permuted = gguf.config.arch == Arch::llama && is_qk(g.name);
      int64_t differing = 0;
      for (int64_t r = 0; r < g.desc.rows(); ++r) {
        const int64_t hr = permuted ? hf_row_of_gguf_row(r, gguf.config.head_dim()) : r;
        differing += std::memcmp(&gv[(size_t)(r * n)], &hv[(size_t)(hr * n)], (size_t)n * sizeof(float)) != 0;
      }
      CHECK(differing == 0);
    }
  }
}

TEST_CASE("a sharded BF16 export loads: matmul weights stay BF16 spans into the shards, 1-D tensors f32") {
  TempDir dir;
  HfExportOptions o;
  o.dtype = "BF16";
  o.shards = 3;
  export_hf_folder(zoo_gguf("qwen2"), dir.file("m"), o);
  CHECK(std::filesystem::exists(dir.file("m/model-00003-of-00003.safetensors")));
  CHECK_FALSE(std::filesystem::exists(dir.file("m/model.safetensors")));
  const ModelWeights hf = load_ok(load_hf_model(dir.file("m")));
  const ModelWeights gguf = load_ok(load_gguf_model(zoo_gguf("qwen2")));
  check_same_config(hf.config, gguf.config);
  REQUIRE(hf.tensors.size() == gguf.tensors.size());
  for (const WeightTensor& g : gguf.tensors) {
    CAPTURE(g.name);
    const WeightTensor* h = hf.find(g.name);
    REQUIRE(h != nullptr);
    CHECK(h->desc.dtype == (g.desc.shape.rank == 2 ? DType::bf16 : DType::f32));
    // The values: the GGUF's f32 rounded to bf16 (as the exporter wrote them), exactly.
    const std::vector<float> gv = as_f32(g), hv = as_f32(*h);
    REQUIRE(gv.size() == hv.size());
    size_t differing = 0;
    for (size_t i = 0; i < gv.size(); ++i) differing += bf16_to_f32(f32_to_bf16(gv[i])) != hv[i];
    CHECK(differing == 0);
  }
}

TEST_CASE("config.json of each architecture: the fields transformers defines, the defaults it applies") {
  // qwen2: Q/K/V biases, NeoX RoPE; a sliding window only where use_sliding_window reaches a layer.
  auto qwen2 = parse_changed("qwen2", nlohmann::json::object());
  REQUIRE_MESSAGE(qwen2.has_value(), qwen2.status().message());
  CHECK(qwen2->config.qkv_bias);
  CHECK(qwen2->config.sliding_window == 0);
  CHECK(parse_changed("qwen2", {{"use_sliding_window", true}, {"max_window_layers", 2}}).has_value());  // no layer at or above 2
  check_message(parse_changed("qwen2", {{"use_sliding_window", true}, {"max_window_layers", 1}}).status(),
                {"use_sliding_window", "max_window_layers 1", "not supported"});
  check_message(parse_changed("qwen3", {{"layer_types", {"full_attention", "sliding_attention"}}}).status(),
                {"layer_types", "full_attention"});
  check_message(parse_changed("qwen3", {{"attention_bias", true}}).status(), {"attention_bias", "expected false"});

  // qwen3: head_dim from config (Qwen3Config's default 128 when absent), per-head Q/K norms.
  auto qwen3 = parse_changed("qwen3", {{"head_dim", 48}});
  REQUIRE_MESSAGE(qwen3.has_value(), qwen3.status().message());
  CHECK(qwen3->config.qk_norm);
  CHECK(qwen3->config.head_dim() == 48);
  CHECK(qwen3->config.rope_dims == 48);
  nlohmann::json no_head_dim = nlohmann::json::parse(R"({"model_type":"qwen3","hidden_size":128,"intermediate_size":32,)"
                                                     R"("num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10})");
  auto qwen3_default = parse_hf_config(no_head_dim.dump(), "config.json");
  REQUIRE(qwen3_default.has_value());
  CHECK(qwen3_default->config.head_dim() == 128);
  CHECK(qwen3_default->config.rms_eps == 1e-6f);

  // gemma2: query_pre_attn_scalar sets the score scale; caps, window and the alternation as stated.
  auto gemma2 = parse_changed("gemma2", {{"query_pre_attn_scalar", 144}, {"attn_logit_softcapping", nullptr},
                                         {"final_logit_softcapping", 25.0}});
  REQUIRE_MESSAGE(gemma2.has_value(), gemma2.status().message());
  const TransformerConfig& g = gemma2->config;
  CHECK(g.attention_scale == 1.0f / std::sqrt(144.0f));
  CHECK(g.attn_logit_softcap == 0.0f);  // null: no cap, as transformers skips it
  CHECK(g.final_logit_softcap == 25.0f);
  CHECK(g.sliding_window == 64);
  CHECK(g.layer_window(0) == 64);
  CHECK(g.layer_window(1) == 0);
  CHECK(g.ffn_activation == FfnActivation::gelu);
  CHECK(g.post_norms);
  CHECK(g.tied_embeddings);
  CHECK(g.embedding_scale == std::sqrt(128.0f));
  CHECK(parse_changed("gemma2", {{"layer_types", {"sliding_attention", "full_attention"}}}).has_value());
  check_message(parse_changed("gemma2", {{"layer_types", {"full_attention", "sliding_attention"}}}).status(),
                {"layer_types", "alternation"});
  check_message(parse_changed("gemma2", {{"hidden_activation", "gelu"}}).status(), {"hidden_activation", "gelu_pytorch_tanh"});
  check_message(parse_changed("gemma2", {{"tie_word_embeddings", false}}).status(), {"tie_word_embeddings", "expected true"});

  // phi3: partial rotary as llama.cpp's converter rounds it; the window noted and not applied, as llama.cpp does.
  auto phi3 = parse_changed("phi3", {{"partial_rotary_factor", 0.75}, {"sliding_window", 2047},
                                     {"original_max_position_embeddings", 4096}});
  REQUIRE_MESSAGE(phi3.has_value(), phi3.status().message());
  CHECK(phi3->config.rope_dims == 24);  // int(0.75 * 128) / 4
  CHECK(phi3->config.fused_qkv);
  CHECK(phi3->config.fused_gate_up);
  CHECK(phi3->config.sliding_window == 0);
  CHECK(phi3->config.unapplied_sliding_window == 2047);
  CHECK(phi3->config.rope_original_context == 4096);
  REQUIRE(phi3->notes.size() == 1);
  CHECK(phi3->notes[0].find("sliding_window 2047 is not applied") != std::string::npos);
  check_message(parse_changed("phi3", {{"rope_scaling", {{"type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}}}}).status(),
                {"rope_scaling", "'longrope'", "supported: default, linear, llama3"});
  check_message(parse_changed("qwen2", {{"partial_rotary_factor", 0.5}}).status(), {"partial_rotary_factor", "only phi3"});

  // Linear RoPE scaling: positions times 1/factor, any architecture.
  auto linear = parse_changed("qwen2", {{"rope_scaling", {{"type", "linear"}, {"factor", 4.0}}}});
  REQUIRE(linear.has_value());
  CHECK(linear->config.rope_freq_scale == 0.25f);
  // transformers v5 spells it rope_parameters, rope_theta inside.
  nlohmann::json v5 = nlohmann::json::parse(R"({"model_type":"llama","hidden_size":8,"intermediate_size":32,"num_hidden_layers":1,)"
                                            R"("num_attention_heads":2,"vocab_size":10,"rope_parameters":{"rope_type":"default","rope_theta":500000.0}})");
  auto llama_v5 = parse_hf_config(v5.dump(), "config.json");
  REQUIRE(llama_v5.has_value());
  CHECK(llama_v5->config.rope_theta == 500000.0f);
}

TEST_CASE("llama3 rope_scaling becomes rope_freqs.weight with the factors llama.cpp's converter computes") {
  TempDir dir;
  HfExportOptions o;
  o.config_overrides = {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}};
  export_hf_folder(zoo_gguf("llama"), dir.file("m"), o);
  const ModelWeights hf = load_ok(load_hf_model(dir.file("m")));
  CHECK(hf.config.rope_freq_factors);
  const WeightTensor* f = *hf.require("rope_freqs.weight", {16});
  const std::vector<float> got = as_f32(*f);
  // convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors, over head_dim 32 and theta 10000.
  int ones = 0, eights = 0, smooth = 0;
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    const double freq = 1.0 / std::pow(10000.0, 2.0 * i / 32.0), wavelen = 2 * M_PI / freq;
    double want;
    if (wavelen < 8192.0 / 4.0) want = 1, ++ones;
    else if (wavelen > 8192.0 / 1.0) want = 8, ++eights;
    else want = 1 / ((1 - (8192.0 / wavelen - 1) / 3.0) / 8 + (8192.0 / wavelen - 1) / 3.0), ++smooth;
    CHECK(std::fabs(got[(size_t)i] - want) <= 1e-6 * want);
  }
  CHECK((ones > 0 && eights > 0 && smooth > 0));  // the case exercises all three ranges
  // High below low is refused, naming the key.
  check_message(parse_changed("llama", {{"rope_scaling", {{"rope_type", "llama3"}, {"low_freq_factor", 4.0}, {"high_freq_factor", 1.0}}}}).status(),
                {"rope_scaling", "high_freq_factor"});
}

TEST_CASE("convert refuses, naming the field, a config the architecture's GGUF keys cannot state, and leaves no file") {
  TempDir dir;
  struct Case {
    nlohmann::json change;
    std::vector<std::string> parts;
  };
  const Case gemma_cases[] = {
      {{{"query_pre_attn_scalar", 144}}, {"query_pre_attn_scalar", "llama.cpp derives", "cannot state"}},
      {{{"final_logit_softcapping", nullptr}}, {"softcapping", "none", "cannot state"}},
  };
  int i = 0;
  for (const Case& c : gemma_cases) {
    CAPTURE(c.change.dump());
    HfExportOptions o;
    o.config_overrides = c.change;
    const std::string folder = dir.file("g" + std::to_string(i++));
    export_hf_folder(zoo_gguf("gemma2"), folder, o);
    const ModelWeights m = load_ok(load_hf_model(folder));  // runs as transformers would
    const std::string out = folder + ".gguf";
    const Status st = write_model_gguf(m, nullptr, DType::f32, out, nullptr);
    REQUIRE_FALSE(st.is_ok());
    INFO("message: " << st.message());
    for (const auto& p : c.parts) CHECK_MESSAGE(st.message().find(p) != std::string::npos, "missing '" << p << "'");
    CHECK_FALSE(std::filesystem::exists(out));
  }
  // A switch no key states (a llama window on every other layer): caught when the file is read back.
  ModelWeights m = load_ok(load_gguf_model(zoo_gguf("llama")));
  m.config.sliding_window = 16;
  m.config.sliding_window_pattern = 2;
  const std::string out = dir.file("llama-pattern.gguf");
  check_message(write_model_gguf(m, nullptr, DType::f32, out, nullptr),
                {"read back", "sliding_window_pattern 1 vs 2", "removed"});
  CHECK_FALSE(std::filesystem::exists(out));
  m.config.sliding_window_pattern = 1;  // every layer: llama.attention.sliding_window says it
  REQUIRE(write_model_gguf(m, nullptr, DType::f32, out, nullptr).is_ok());
  CHECK(load_ok(load_gguf_model(out)).config.sliding_window == 16);
}

TEST_CASE("convert writes linear RoPE scaling, and phi3's window and original context, as llama.cpp's converter does") {
  TempDir dir;
  HfExportOptions linear;
  linear.config_overrides = {{"rope_scaling", {{"type", "linear"}, {"factor", 4.0}}}};
  export_hf_folder(zoo_gguf("qwen2"), dir.file("q"), linear);
  REQUIRE(write_model_gguf(load_ok(load_hf_model(dir.file("q"))), nullptr, DType::f32, dir.file("q.gguf"), nullptr).is_ok());
  auto q = GgufFile::open(dir.file("q.gguf"));
  REQUIRE(q.has_value());
  CHECK(*q->get_string("qwen2.rope.scaling.type") == "linear");
  CHECK(*q->get_float("qwen2.rope.scaling.factor") == 4.0);
  CHECK(load_ok(load_gguf_model(dir.file("q.gguf"))).config.rope_freq_scale == 0.25f);

  HfExportOptions phi;
  phi.config_overrides = {{"sliding_window", 2047}, {"original_max_position_embeddings", 4096}};
  export_hf_folder(zoo_gguf("phi3"), dir.file("p"), phi);
  REQUIRE(write_model_gguf(load_ok(load_hf_model(dir.file("p"))), nullptr, DType::f32, dir.file("p.gguf"), nullptr).is_ok());
  auto p = GgufFile::open(dir.file("p.gguf"));
  REQUIRE(p.has_value());
  CHECK(*p->get_uint("phi3.attention.sliding_window") == 2047);
  CHECK(*p->get_uint("phi3.rope.scaling.original_context_length") == 4096);
  const ModelWeights back = load_ok(load_gguf_model(dir.file("p.gguf")));
  CHECK(back.config.sliding_window == 0);  // read, not applied, on either path
  CHECK(back.config.unapplied_sliding_window == 2047);
}
