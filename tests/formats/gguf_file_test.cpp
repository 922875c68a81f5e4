// The GGUF reader and writer: typed values, write → read → write identity,
// and a file written by llama.cpp's converter.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/load_model.h"
#include "format_test_util.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
GgufValue nested_array() {
  GgufValue v;
  v.type = GgufType::array;
  v.array.elem_type = GgufType::array;
  v.array.count = 2;
  v.array.arrays.push_back(GgufValue::of_i32s({1, -2, 3}).array);
  v.array.arrays.push_back(GgufValue::of_i32s({}).array);
  return v;
}
}  // namespace

TEST_CASE("GGUF writer and reader agree on every value type, in order, with typed getters") {
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("a.u32", 4000000000u);
  w.set_i32("a.i32", -7);
  w.set_u64("a.u64", 1ull << 40);
  w.set_f32("a.f32", 0.125f);
  w.set_bool("a.bool", true);
  w.set_string_array("a.strings", {"x", "", "▁hello"});
  w.set_f32_array("a.floats", {1.5f, -2.0f});
  w.set_i32_array("a.ints", {5, -6, 7});
  w.set("a.nested", nested_array());
  w.set("a.f64", GgufValue::of_f64(2.5));
  w.set_u32("a.u32", 17);  // replaces in place, keeps its position
  const std::string path = dir.file("values.gguf");
  REQUIRE(w.write(path).is_ok());

  auto f = GgufFile::open(path);
  REQUIRE_MESSAGE(f.has_value(), f.status().message());
  CHECK(f->version() == 3);
  CHECK(f->alignment() == 32);
  CHECK(f->tensors().empty());
  const std::vector<std::string> order = {"general.architecture", "a.u32", "a.i32", "a.u64", "a.f32", "a.bool",
                                          "a.strings", "a.floats", "a.ints", "a.nested", "a.f64"};
  REQUIRE(f->kvs().size() == order.size());
  for (size_t i = 0; i < order.size(); ++i) CHECK(f->kvs()[i].key == order[i]);
  CHECK(*f->get_uint("a.u32") == 17);
  CHECK(*f->get_int("a.i32") == -7);
  CHECK(*f->get_uint("a.u64") == (1ull << 40));
  CHECK(*f->get_float("a.f32") == 0.125);
  CHECK(*f->get_float("a.f64") == 2.5);
  CHECK(*f->get_bool("a.bool"));
  CHECK(*f->get_string("general.architecture") == "llama");
  CHECK(*f->get_string_array("a.strings") == std::vector<std::string>{"x", "", "▁hello"});
  CHECK(*f->get_f32_array("a.floats") == std::vector<float>{1.5f, -2.0f});
  CHECK(*f->get_i32_array("a.ints") == std::vector<int32_t>{5, -6, 7});
  const GgufValue* nested = f->find("a.nested");
  REQUIRE(nested != nullptr);
  CHECK(nested->type_name() == "array<array<i32>>");
  CHECK(nested->to_display_string() == "[[1, -2, 3], []]");

  check_message(f->get_uint("a.i32").status(), {path, "'a.i32'", "-7"});
  check_message(f->get_string("a.u32").status(), {path, "'a.u32'", "is u32", "expected string"});
  check_message(f->get_f32_array("a.ints").status(), {path, "'a.ints'", "array<i32>", "expected array<f32>"});
  check_message(f->get_bool("no.such.key").status(), {path, "'no.such.key'", "missing"});
  CHECK(f->get_bool("no.such.key").status().code() == StatusCode::not_found);
}

TEST_CASE("GGUF write → read → write is byte-identical, tensors included") {
  Rng rng(11);
  TempDir dir;
  GgufWriter w;
  w.set_string("general.name", "roundtrip");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "▁a"});
  const auto a = rng.bytes(4 * 3 * 5);
  const auto b = rng.bytes(sizeof(BlockQ8_0) * 2 * 4);
  const auto c = rng.bytes(2 * 7);
  REQUIRE(w.add_tensor("a", DType::f32, {3, 5}, std::span<const std::byte>(a)).is_ok());
  REQUIRE(w.add_tensor("b", DType::q8_0, {4, 64}, std::span<const std::byte>(b)).is_ok());
  REQUIRE(w.add_tensor("c", DType::f16, {7}, std::span<const std::byte>(c)).is_ok());
  check_message(w.add_tensor("d", DType::f32, {2, 2}, std::span<const std::byte>(c)), {"'d'", "14 bytes", "16"});
  check_message(w.add_tensor("d", DType::q4_0, {2, 20}, std::vector<std::byte>(36)), {"'d'", "q4_0"});
  check_message(w.add_tensor("a", DType::f32, {3, 5}, std::span<const std::byte>(a)), {"'a'", "twice"});
  const std::string first = dir.file("first.gguf"), second = dir.file("second.gguf");
  REQUIRE(w.write(first).is_ok());

  auto f = GgufFile::open(first);
  REQUIRE_MESSAGE(f.has_value(), f.status().message());
  REQUIRE(f->tensors().size() == 3);
  const GgufTensorInfo* tb = f->find_tensor("b");
  REQUIRE(tb != nullptr);
  CHECK(tb->dtype == DType::q8_0);
  CHECK(tb->shape == Shape{4, 64});
  CHECK(tb->offset % 32 == 0);
  CHECK(std::memcmp(tb->data.data(), b.data(), b.size()) == 0);
  CHECK(f->data_offset() % 32 == 0);
  REQUIRE(gguf_writer_from(*f).write(second).is_ok());
  CHECK(read_bytes(first) == read_bytes(second));
}

TEST_CASE("GGUF writer honours general.alignment") {
  TempDir dir;
  GgufWriter w;
  w.set_u32("general.alignment", 64);
  const std::vector<std::byte> x(4 * 3);
  REQUIRE(w.add_tensor("x", DType::f32, {3}, std::span<const std::byte>(x)).is_ok());
  REQUIRE(w.add_tensor("y", DType::f32, {3}, std::span<const std::byte>(x)).is_ok());
  REQUIRE(w.write(dir.file("a64.gguf")).is_ok());
  auto f = GgufFile::open(dir.file("a64.gguf"));
  REQUIRE_MESSAGE(f.has_value(), f.status().message());
  CHECK(f->alignment() == 64);
  CHECK(f->data_offset() % 64 == 0);
  CHECK(f->find_tensor("y")->offset == 64);
  w.set_u32("general.alignment", 48);
  check_message(w.write(dir.file("bad.gguf")), {"general.alignment", "power of two"});
}

TEST_CASE("llama-2-tiny-random.gguf, written by llama.cpp, loads with its 32,000-token vocabulary") {
  const std::string path = shared_path("models/llama-2-tiny-random.gguf");
  auto m = load_model(path);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  CHECK(m->format == "gguf");
  const TransformerConfig& c = m->config;
  CHECK(c.dim == 8);
  CHECK(c.hidden_dim == 32);
  CHECK(c.n_layers == 1);
  CHECK(c.n_heads == 2);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.vocab_size == 32000);
  CHECK(c.context_length == 4096);
  CHECK(c.rope_dims == 4);
  CHECK(c.rope_layout == RopeLayout::interleaved);
  for (const auto& t : m->tensors) {
    INFO(t.name << " " << t.desc.to_string());
    CHECK(t.desc.dtype == (t.desc.shape.rank == 2 ? DType::f16 : DType::f32));
  }
  CHECK(m->require("token_embd.weight", {32000, 8}).has_value());
  CHECK(m->require("blk.0.ffn_down.weight", {8, 32}).has_value());
  REQUIRE(m->tokenizer.has_value());
  const TokenizerData& tok = *m->tokenizer;
  CHECK(tok.model == "llama");
  CHECK(tok.tokens.size() == 32000);
  CHECK(tok.scores.size() == 32000);
  CHECK(tok.types.size() == 32000);
  CHECK(tok.tokens[1] == "<s>");
  CHECK(tok.tokens[29871] == "▁");
  CHECK(tok.types[1] == TokenType::control);
  CHECK(tok.types[3] == TokenType::byte);
  CHECK(tok.bos_id == 1);
  CHECK(tok.eos_id == 2);
  CHECK(tok.unk_id == 0);
  CHECK_FALSE(c.tied_embeddings);
  CHECK(m->require("output.weight", {32000, 8}).has_value());
  CHECK(m->tensors.size() == 12);
  // Unconsumed keys are kept for `tessera info`; consumed ones are not.
  CHECK(m->metadata.at("general.name") == "LLaMA v2");
  CHECK(m->metadata.count("llama.block_count") == 0);
  CHECK(m->metadata.count("tokenizer.ggml.tokens") == 0);
}

TEST_CASE("a GGUF file written by llama.cpp is re-emitted byte for byte by our writer") {
  TempDir dir;
  auto f = GgufFile::open(shared_path("models/llama-2-tiny-random.gguf"));
  REQUIRE_MESSAGE(f.has_value(), f.status().message());
  const std::string once = dir.file("once.gguf"), twice = dir.file("twice.gguf");
  REQUIRE(gguf_writer_from(*f).write(once).is_ok());
  auto g = GgufFile::open(once);
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  REQUIRE(gguf_writer_from(*g).write(twice).is_ok());
  CHECK(read_bytes(once) == read_bytes(twice));
  CHECK(read_bytes(once) == read_bytes(shared_path("models/llama-2-tiny-random.gguf")));
}
