// write_model_gguf: what load_gguf_model reads back is the model it was given
// (exactly in f32, within the quantizer's bound in q8_0/q4_0).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "core/quant.h"
#include "engine/formats/convert.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/llama2c_loader.h"
#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
void check_same_config(const TransformerConfig& a, const TransformerConfig& b) {
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
  CHECK(a.rope_layout == b.rope_layout);
  CHECK(a.tied_embeddings == b.tied_embeddings);
}

std::vector<float> as_f32(const WeightTensor& t) {
  std::vector<float> out((size_t)t.desc.shape.numel());
  const int64_t n = t.desc.shape.last();
  for (int64_t r = 0; r < t.desc.rows(); ++r)
    dequantize_row(t.desc.dtype, t.data.data() + r * t.desc.row_bytes(), out.data() + r * n, n);
  return out;
}

// Largest |x - y| over each block of `block` elements, divided by that
// block's largest |x|; the quantizer's bound is stated per block.
double worst_block_error(const std::vector<float>& x, const std::vector<float>& y, size_t block) {
  double worst = 0;
  for (size_t b = 0; b < x.size(); b += block) {
    double amax = 0, err = 0;
    for (size_t i = b; i < b + block; ++i) {
      amax = std::max(amax, (double)std::fabs(x[i]));
      err = std::max(err, (double)std::fabs(x[i] - y[i]));
    }
    if (amax > 0) worst = std::max(worst, err / amax);
  }
  return worst;
}

// Converts stories260K to `type` and checks every tensor read back against
// the original: 2-D tensors within `rel_bound` of their block's max, f16
// fallbacks within half-precision rounding, norms byte-identical.
void check_quantized(DType type, double rel_bound) {
  TempDir dir;
  auto src = load_llama2c(shared_path("models/stories260K.bin"));
  REQUIRE_MESSAGE(src.has_value(), src.status().message());
  std::vector<std::string> notes;
  const std::string out = dir.file("stories." + std::string(name(type)) + ".gguf");
  REQUIRE(write_model_gguf(*src, nullptr, type, out, &notes).is_ok());
  // hidden_dim 172 is not a whole number of 32-element blocks: each ffn_down falls back.
  REQUIRE(notes.size() == 5);
  for (int i = 0; i < 5; ++i) {
    INFO(notes[(size_t)i]);
    CHECK(notes[(size_t)i].find("'blk." + std::to_string(i) + ".ffn_down.weight'") != std::string::npos);
    CHECK(notes[(size_t)i].find("172") != std::string::npos);
    CHECK(notes[(size_t)i].find("f16") != std::string::npos);
  }
  auto back = load_gguf_model(out);
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  check_same_config(src->config, back->config);
  REQUIRE(back->tensors.size() == src->tensors.size());
  for (const auto& t : src->tensors) {
    INFO(t.name);
    const WeightTensor* u = back->find(t.name);
    REQUIRE(u != nullptr);
    CHECK(u->desc.shape == t.desc.shape);
    const bool fallback = t.name.find("ffn_down") != std::string::npos;
    if (t.desc.shape.rank == 1) {
      CHECK(u->desc.dtype == DType::f32);
      CHECK(std::memcmp(u->data.data(), t.data.data(), t.data.size()) == 0);
    } else if (fallback) {
      CHECK(u->desc.dtype == DType::f16);
      const auto x = as_f32(t), y = as_f32(*u);
      for (size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i] - y[i]) <= std::fabs(x[i]) * 0x1p-11 + 0x1p-25);
    } else {
      CHECK(u->desc.dtype == type);
      CHECK(worst_block_error(as_f32(t), as_f32(*u), 32) <= rel_bound);
    }
  }
}
}  // namespace

TEST_CASE("stories260K converted to f32 GGUF loads back with the same config and identical tensor bytes") {
  TempDir dir;
  auto src = load_llama2c(shared_path("models/stories260K.bin"));
  REQUIRE_MESSAGE(src.has_value(), src.status().message());
  std::vector<std::string> notes;
  const std::string out = dir.file("stories.f32.gguf");
  REQUIRE(write_model_gguf(*src, nullptr, DType::f32, out, &notes).is_ok());
  CHECK(notes.empty());
  auto back = load_gguf_model(out);
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(back->format == "gguf");
  check_same_config(src->config, back->config);
  CHECK(back->find("output.weight") == nullptr);
  CHECK_FALSE(back->tokenizer.has_value());
  CHECK(back->metadata.at("general.name") == "stories260K");
  REQUIRE(back->tensors.size() == src->tensors.size());
  for (const auto& t : src->tensors) {
    INFO(t.name);
    const WeightTensor* u = back->find(t.name);
    REQUIRE(u != nullptr);
    CHECK(u->desc.dtype == DType::f32);
    CHECK(u->desc.shape == t.desc.shape);
    REQUIRE(u->data.size() == t.data.size());
    CHECK(std::memcmp(u->data.data(), t.data.data(), t.data.size()) == 0);
  }
}

// q8_0: d = f16(amax/127), |x - q·d| <= d/2 plus d's f16 rounding times |q| <= 127:
// about 0.5/127 + 2^-11 of the block's max; 0.0045 leaves a little room.
TEST_CASE("stories260K converted to q8_0 stays within 0.45% of each block's max, ffn_down falls back to f16") {
  check_quantized(DType::q8_0, 0.0045);
}

// q4_0: d = amax/8; the clamp at 15 costs up to one step on the far side.
TEST_CASE("stories260K converted to q4_0 stays within 1/8 of each block's max, ffn_down falls back to f16") {
  check_quantized(DType::q4_0, 0.126);
}

TEST_CASE("aidreams260K with its tokenizer converts to f16 GGUF and the vocabulary comes back whole") {
  TempDir dir;
  auto src = load_llama2c(shared_path("models/aidreams260K.bin"));
  REQUIRE_MESSAGE(src.has_value(), src.status().message());
  auto tok = Tokenizer::load_llama2c(shared_path("models/aidreams260K.tok512.bin"), src->config.vocab_size);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  const std::string out = dir.file("aidreams.f16.gguf");
  REQUIRE(write_model_gguf(*src, &tok->data(), DType::f16, out, nullptr).is_ok());
  auto back = load_gguf_model(out);
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  check_same_config(src->config, back->config);
  REQUIRE(back->tokenizer.has_value());
  const TokenizerData& a = tok->data();
  const TokenizerData& b = *back->tokenizer;
  CHECK(a.model == b.model);
  CHECK(a.tokens == b.tokens);
  CHECK(a.scores == b.scores);
  CHECK(a.types == b.types);
  CHECK(a.bos_id == b.bos_id);
  CHECK(a.eos_id == b.eos_id);
  CHECK(a.unk_id == b.unk_id);
  CHECK(a.add_bos == b.add_bos);
  CHECK(a.add_eos == b.add_eos);
  CHECK(back->require("blk.0.attn_q.weight", {64, 64}).value()->desc.dtype == DType::f16);
}

TEST_CASE("a half-split RoPE model is written with Q/K rows in GGUF's interleaved order") {
  // dim 8, 2 heads of 4: within each head, interleaved row 2i+j is half-split row j*2+i.
  Rng rng(5);
  auto store = std::make_shared<std::vector<std::vector<float>>>();
  ModelWeights m;
  m.source = "synthetic";
  m.format = "synthetic";
  m.config = {8, 32, 1, 2, 2, 4, 16, 4, 10000.0f, 1e-5f, RopeLayout::half_split, true};
  auto add = [&](const std::string& n, Shape s) {
    store->push_back(rng.floats((size_t)s.numel()));
    const auto& v = store->back();
    m.tensors.push_back({n, TensorDesc::contiguous(DType::f32, s),
                         {reinterpret_cast<const std::byte*>(v.data()), v.size() * 4}});
  };
  store->reserve(16);
  add("token_embd.weight", {4, 8});
  add("blk.0.attn_norm.weight", {8});
  add("blk.0.attn_q.weight", {8, 8});
  add("blk.0.attn_k.weight", {8, 8});
  add("blk.0.attn_v.weight", {8, 8});
  add("blk.0.attn_output.weight", {8, 8});
  add("blk.0.ffn_norm.weight", {8});
  add("blk.0.ffn_gate.weight", {32, 8});
  add("blk.0.ffn_up.weight", {32, 8});
  add("blk.0.ffn_down.weight", {8, 32});
  add("output_norm.weight", {8});
  m.storage = store;

  TempDir dir;
  std::vector<std::string> notes;
  REQUIRE(write_model_gguf(m, nullptr, DType::f32, dir.file("hs.gguf"), &notes).is_ok());
  CHECK(notes.size() == 2);
  auto back = load_gguf_model(dir.file("hs.gguf"));
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(back->config.rope_layout == RopeLayout::interleaved);
  const int old_row[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (const char* n : {"blk.0.attn_q.weight", "blk.0.attn_k.weight"}) {
    INFO(n);
    const auto src = as_f32(*m.find(n)), dst = as_f32(*back->find(n));
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) CHECK(dst[(size_t)(r * 8 + c)] == src[(size_t)(old_row[r] * 8 + c)]);
  }
  const auto v = as_f32(*back->find("blk.0.attn_v.weight"));
  CHECK(v == as_f32(*m.find("blk.0.attn_v.weight")));
}
