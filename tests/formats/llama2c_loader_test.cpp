// The llama2.c loader against the shared checkpoints, whose headers the
// shared README lists, and against the raw file bytes (read independently).
#include <doctest/doctest.h>

#include <cstring>

#include "engine/models/llama2c_loader.h"
#include "engine/models/load_model.h"
#include "format_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
struct Expect {
  const char* file;
  int dim, hidden, layers, heads, kv_heads, vocab, seq_len;
};

void check_checkpoint(const Expect& e) {
  const std::string path = shared_path(std::string("models/") + e.file);
  auto m = load_llama2c(path);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  const TransformerConfig& c = m->config;
  CHECK(m->format == "llama2c");
  CHECK(c.dim == e.dim);
  CHECK(c.hidden_dim == e.hidden);
  CHECK(c.n_layers == e.layers);
  CHECK(c.n_heads == e.heads);
  CHECK(c.n_kv_heads == e.kv_heads);
  CHECK(c.vocab_size == e.vocab);
  CHECK(c.context_length == e.seq_len);
  CHECK(c.rope_dims == e.dim / e.heads);
  CHECK(c.rope_theta == 10000.0f);
  CHECK(c.rms_eps == 1e-5f);
  CHECK(c.rope_layout == RopeLayout::interleaved);
  CHECK(c.tied_embeddings);
  CHECK(m->find("output.weight") == nullptr);
  CHECK_FALSE(m->tokenizer.has_value());
  CHECK(m->tensors.size() == (size_t)(2 + 9 * e.layers));

  const int64_t dim = e.dim, hidden = e.hidden, kv_dim = (int64_t)e.dim / e.heads * e.kv_heads, L = e.layers;
  CHECK(m->require("token_embd.weight", {e.vocab, dim}).has_value());
  CHECK(m->require("output_norm.weight", {dim}).has_value());
  for (int i = 0; i < e.layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    CHECK(m->require(p + "attn_norm.weight", {dim}).has_value());
    CHECK(m->require(p + "attn_q.weight", {dim, dim}).has_value());
    CHECK(m->require(p + "attn_k.weight", {kv_dim, dim}).has_value());
    CHECK(m->require(p + "attn_v.weight", {kv_dim, dim}).has_value());
    CHECK(m->require(p + "attn_output.weight", {dim, dim}).has_value());
    CHECK(m->require(p + "ffn_norm.weight", {dim}).has_value());
    CHECK(m->require(p + "ffn_gate.weight", {hidden, dim}).has_value());
    CHECK(m->require(p + "ffn_up.weight", {hidden, dim}).has_value());
    CHECK(m->require(p + "ffn_down.weight", {dim, hidden}).has_value());
  }
  for (const auto& t : m->tensors) CHECK(t.desc.dtype == DType::f32);

  // run.c's offsets, computed here from the header, hold the tensors' bytes.
  const std::vector<uint8_t> raw = read_bytes(path);
  const uint64_t f = 4;
  const uint64_t embd = 28, att_norm = embd + f * e.vocab * dim, wq = att_norm + f * L * dim;
  const uint64_t wk = wq + f * L * dim * dim, wv = wk + f * L * kv_dim * dim, wo = wv + f * L * kv_dim * dim;
  const uint64_t ffn_norm = wo + f * L * dim * dim, w1 = ffn_norm + f * L * dim, w2 = w1 + f * L * hidden * dim;
  const uint64_t w3 = w2 + f * L * dim * hidden, final_norm = w3 + f * L * hidden * dim;
  auto at = [&](const std::string& name, uint64_t offset) {
    const WeightTensor* t = m->find(name);
    REQUIRE(t != nullptr);
    REQUIRE(offset + t->data.size() <= raw.size());
    CHECK_MESSAGE(std::memcmp(t->data.data(), raw.data() + offset, t->data.size()) == 0, name);
  };
  const uint64_t last = (uint64_t)L - 1;
  at("token_embd.weight", embd);
  at("blk.0.attn_norm.weight", att_norm);
  at("blk." + std::to_string(last) + ".attn_q.weight", wq + last * f * dim * dim);
  at("blk.1.attn_k.weight", wk + f * kv_dim * dim);
  at("blk.1.attn_v.weight", wv + f * kv_dim * dim);
  at("blk.0.attn_output.weight", wo);
  at("blk.1.ffn_norm.weight", ffn_norm + f * dim);
  at("blk.0.ffn_gate.weight", w1);
  at("blk." + std::to_string(last) + ".ffn_down.weight", w2 + last * f * dim * hidden);
  at("blk.0.ffn_up.weight", w3);
  at("output_norm.weight", final_norm);
  CHECK(m->total_bytes() == raw.size() - 28 - f * (uint64_t)e.seq_len * (dim / e.heads));
}
}  // namespace

TEST_CASE("llama2c loader reads stories260K with the README's header and run.c's tensor layout") {
  check_checkpoint({"stories260K.bin", 64, 172, 5, 8, 4, 512, 512});
}

TEST_CASE("llama2c loader reads aidreams260K with the README's header and run.c's tensor layout") {
  check_checkpoint({"aidreams260K.bin", 64, 172, 4, 4, 4, 512, 128});
}

TEST_CASE("load_model picks the llama2.c loader for a file without the GGUF magic") {
  auto m = load_model(shared_path("models/stories260K.bin"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  CHECK(m->format == "llama2c");
  CHECK(m->config.n_kv_heads == 4);
}

TEST_CASE("llama2c loader exposes an unshared classifier as output.weight") {
  // stories260K with vocab_size negated and a classifier appended.
  TempDir dir;
  std::vector<uint8_t> raw = read_bytes(shared_path("models/stories260K.bin"));
  int32_t vocab;
  std::memcpy(&vocab, raw.data() + 20, 4);
  const int32_t neg = -vocab;
  std::memcpy(raw.data() + 20, &neg, 4);
  std::vector<uint8_t> cls((size_t)vocab * 64 * 4);
  for (size_t i = 0; i < cls.size(); ++i) cls[i] = (uint8_t)(i * 7);
  raw.insert(raw.end(), cls.begin(), cls.end());
  write_bytes(dir.file("unshared.bin"), raw);
  auto m = load_llama2c(dir.file("unshared.bin"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  CHECK_FALSE(m->config.tied_embeddings);
  CHECK(m->config.vocab_size == vocab);
  auto out = m->require("output.weight", {vocab, 64});
  REQUIRE(out.has_value());
  CHECK(std::memcmp((*out)->data.data(), cls.data(), cls.size()) == 0);
}
