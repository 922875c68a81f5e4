// GGUF files of every architecture: the zoo files load with the switches
// llama.cpp reads from their keys and tensors, RoPE scaling comes from
// {arch}.rope.scaling.* and rope_freqs.weight, and what the graph would
// leave out (an unknown architecture, scaling type or tensor) is refused in
// one line naming it.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/gguf_model_loader.h"
#include "format_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

std::string zoo(const std::string& name) { return shared_path("models/zoo/" + name + ".gguf"); }

TransformerConfig config_of(const std::string& name) {
  auto m = load_gguf_model(zoo(name));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return m->config;
}

// The llama zoo file re-written with `edit` applied, then loaded.
Expected<ModelWeights> load_edited(const TempDir& dir, const std::string& name, const std::function<void(GgufWriter&)>& edit,
                                   std::string* path) {
  auto f = GgufFile::open(zoo("llama-f32"));
  REQUIRE(f.has_value());
  GgufWriter w = gguf_writer_from(*f);
  edit(w);
  *path = dir.file(name);
  REQUIRE(w.write(*path).is_ok());
  return load_gguf_model(*path);
}

}  // namespace

TEST_CASE("each zoo file loads as its architecture with llama.cpp's switches") {
  const TransformerConfig llama = config_of("llama-f32");
  CHECK(llama.arch == Arch::llama);
  CHECK(llama.rope_layout == RopeLayout::interleaved);
  CHECK(llama.sliding_window == 0);
  CHECK(!llama.tied_embeddings);

  const TransformerConfig qwen2 = config_of("qwen2-f32");
  CHECK(qwen2.arch == Arch::qwen2);
  CHECK(qwen2.qkv_bias);
  CHECK(qwen2.rope_layout == RopeLayout::half_split);
  CHECK(qwen2.rope_theta == 1e6f);
  CHECK(qwen2.head_dim() == 32);

  const TransformerConfig qwen3 = config_of("qwen3-f32");
  CHECK(qwen3.arch == Arch::qwen3);
  CHECK(qwen3.qk_norm);
  CHECK(!qwen3.qkv_bias);
  CHECK(qwen3.head_dim() == 32);
  CHECK(qwen3.rope_layout == RopeLayout::half_split);

  const TransformerConfig gemma2 = config_of("gemma2-f32");
  CHECK(gemma2.arch == Arch::gemma2);
  CHECK(gemma2.post_norms);
  CHECK(gemma2.ffn_activation == FfnActivation::gelu);
  CHECK(gemma2.tied_embeddings);
  CHECK(gemma2.attn_logit_softcap == 50.0f);
  CHECK(gemma2.final_logit_softcap == 30.0f);
  CHECK(gemma2.embedding_scale == std::sqrt(128.0f));
  CHECK(gemma2.attention_scale == 1.0f / std::sqrt(32.0f));
  // llama.cpp's pattern 2: the even layers see a window of 64, the odd ones everything.
  CHECK(gemma2.layer_window(0) == 64);
  CHECK(gemma2.layer_window(1) == 0);

  const TransformerConfig phi3 = config_of("phi3-f32");
  CHECK(phi3.arch == Arch::phi3);
  CHECK(phi3.fused_qkv);
  CHECK(phi3.fused_gate_up);
  CHECK(phi3.n_kv_heads == 4);
  CHECK(phi3.rope_dims == 32);
  CHECK(phi3.rope_layout == RopeLayout::half_split);
}

TEST_CASE("an unknown architecture is refused in one line naming general.architecture and the supported ones") {
  TempDir dir;
  std::string path;
  auto m = load_edited(dir, "gpt2.gguf", [](GgufWriter& w) { w.set_string("general.architecture", "gpt2"); }, &path);
  REQUIRE(!m.has_value());
  check_message(m.status(), {path + ": key 'general.architecture' is 'gpt2'; supported: llama, qwen2, qwen3, gemma2, phi3"});
}

TEST_CASE("llama3 RoPE scaling: the file's rope_freqs.weight, or factors made from rope.scaling.* as the converter makes them") {
  TempDir dir;
  std::string path;
  const TransformerConfig base = config_of("llama-f32");
  const int32_t pairs = base.rope_dims / 2;
  std::vector<float> factors((size_t)pairs);
  for (int32_t i = 0; i < pairs; ++i) factors[(size_t)i] = 1.0f + (float)i;
  auto with_tensor = load_edited(dir, "freqs.gguf", [&](GgufWriter& w) {
    REQUIRE(w.add_tensor("rope_freqs.weight", DType::f32, Shape{pairs}, std::as_bytes(std::span<const float>(factors))).is_ok());
  }, &path);
  REQUIRE_MESSAGE(with_tensor.has_value(), with_tensor.status().message());
  CHECK(with_tensor->config.rope_freq_factors);
  CHECK(with_tensor->config.rope_freq_scale == 1.0f);

  // No tensor: Meta's formula, theta 10000 over 32 dims, factor 8, 8192 original positions.
  auto made = load_edited(dir, "llama3.gguf", [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "llama3");
    w.set_f32("llama.rope.scaling.factor", 8.0f);
    w.set_u32("llama.rope.scaling.original_context_length", 8192);
  }, &path);
  REQUIRE_MESSAGE(made.has_value(), made.status().message());
  REQUIRE(made->config.rope_freq_factors);
  const WeightTensor* t = made->find("rope_freqs.weight");
  REQUIRE(t != nullptr);
  REQUIRE(t->desc.shape == Shape{pairs});
  const auto* f = reinterpret_cast<const float*>(t->data.data());
  CHECK(f[0] == 1.0f);            // wavelength 2 pi: far below 8192 / 4
  CHECK(f[pairs - 1] == 8.0f);    // wavelength ~ 2 pi * 5600: beyond 8192
  for (int32_t i = 1; i < pairs; ++i) CHECK(f[i] >= f[i - 1]);
  // The smooth band: pair 11's wavelength 2 pi * 10000^(22/32) ~ 3532 lies between 2048 and 8192.
  const double wavelen = 2 * M_PI * std::pow(10000.0, 22.0 / 32), smooth = (8192 / wavelen - 1) / 3;
  CHECK(f[11] == doctest::Approx(1 / ((1 - smooth) / 8 + smooth)));

  auto linear = load_edited(dir, "linear.gguf", [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", 4.0f);
  }, &path);
  REQUIRE_MESSAGE(linear.has_value(), linear.status().message());
  CHECK(linear->config.rope_freq_scale == 0.25f);
  CHECK(!linear->config.rope_freq_factors);

  auto yarn = load_edited(dir, "yarn.gguf", [](GgufWriter& w) { w.set_string("llama.rope.scaling.type", "yarn"); }, &path);
  REQUIRE(!yarn.has_value());
  check_message(yarn.status(), {path, "key 'llama.rope.scaling.type' is 'yarn'; supported: none, linear, llama3"});
}

TEST_CASE("Mistral's llama.attention.sliding_window windows every layer") {
  TempDir dir;
  std::string path;
  auto m = load_edited(dir, "swa.gguf", [](GgufWriter& w) { w.set_u32("llama.attention.sliding_window", 4096); }, &path);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  for (int32_t l = 0; l < m->config.n_layers; ++l) CHECK(m->config.layer_window(l) == 4096);
}

TEST_CASE("a tensor the architecture does not read is refused by name") {
  TempDir dir;
  std::string path;
  const std::vector<float> bias(128, 0.5f);
  auto m = load_edited(dir, "bias.gguf", [&](GgufWriter& w) {
    REQUIRE(w.add_tensor("blk.0.attn_output.bias", DType::f32, Shape{128}, std::as_bytes(std::span<const float>(bias))).is_ok());
  }, &path);
  REQUIRE(!m.has_value());
  check_message(m.status(), {path, "tensor 'blk.0.attn_output.bias'", "llama"});
}
