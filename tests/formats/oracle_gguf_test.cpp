// GGUF files Tessera writes, read back by an independent reader: Hugging
// Face's @huggingface/gguf (run by Node.js from tests/oracle). Its view of
// the metadata (keys, types, values) and of the tensor table (names, ne[],
// ggml types, offsets, where the data section starts) must be exactly what
// Tessera meant to write.
#include <doctest/doctest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/formats/convert.h"
#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/llama2c_loader.h"
#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"
#include "node_oracle.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;
using json = nlohmann::json;

namespace {
// A GgufValue as the JS reader reports it: numbers as numbers, 64-bit
// integers as decimal strings (BigInt), arrays element by element.
json expected_value(GgufType type, uint64_t bits, const std::string& str, const GgufArray* array);

json expected_array(const GgufArray& a) {
  json out = json::array();
  const uint32_t n = gguf_scalar_bytes(a.elem_type);
  for (uint64_t i = 0; i < a.count; ++i) {
    if (a.elem_type == GgufType::string) out.push_back(a.strings[i]);
    else if (a.elem_type == GgufType::array) out.push_back(expected_array(a.arrays[i]));
    else {
      uint64_t bits = 0;
      std::memcpy(&bits, a.raw.data() + i * n, n);
      out.push_back(expected_value(a.elem_type, bits, "", nullptr));
    }
  }
  return out;
}

json expected_value(GgufType type, uint64_t bits, const std::string& str, const GgufArray* array) {
  GgufValue v;
  v.type = type;
  v.bits = bits;
  switch (type) {
    case GgufType::string: return str;
    case GgufType::array: return expected_array(*array);
    case GgufType::boolean: return bits != 0;
    case GgufType::f32: case GgufType::f64: return v.as_f64();
    case GgufType::u64: return std::to_string(bits);
    case GgufType::i64: return std::to_string(v.as_i64());
    case GgufType::i8: case GgufType::i16: case GgufType::i32: return v.as_i64();
    default: return bits;
  }
}

json expected(const GgufValue& v) { return expected_value(v.type, v.bits, v.str, &v.array); }

GgufValue scalar(GgufType t, uint64_t bits) {
  GgufValue v;
  v.type = t;
  v.bits = bits;
  return v;
}

template <class T>
GgufValue packed(GgufType t, std::vector<T> xs) {
  GgufValue v;
  v.type = GgufType::array;
  v.array.elem_type = t;
  v.array.count = xs.size();
  v.array.raw.resize(xs.size() * sizeof(T));
  if (!xs.empty()) std::memcpy(v.array.raw.data(), xs.data(), v.array.raw.size());
  return v;
}

GgufValue nested() {
  GgufValue v;
  v.type = GgufType::array;
  v.array.elem_type = GgufType::array;
  v.array.arrays = {GgufValue::of_i32s({1, -2, 3}).array, GgufValue::of_i32s({}).array,
                    GgufValue::of_strings({"a", "▁b"}).array};
  v.array.count = v.array.arrays.size();
  return v;
}

json read_with_oracle(const std::string& gguf, const TempDir& dir) {
  const std::string out = dir.file("gguf.json");
  run_oracle("gguf_read.mjs", {gguf, out}, dir);
  return json::parse(slurp(out));
}

// The oracle's metadata and tensor table against Tessera's reader of the same
// file, and both against `meant` (the KVs in order) and `tensors`.
struct MeantTensor {
  std::string name;
  DType dtype;
  Shape shape;
};

void check_file(const std::string& path, const std::vector<GgufKv>& meant, const std::vector<MeantTensor>& tensors,
                uint32_t alignment, const TempDir& dir) {
  const json o = read_with_oracle(path, dir);
  auto f = GgufFile::open(path);
  REQUIRE_MESSAGE(f.has_value(), f.status().message());
  CHECK(o["version"] == 3);
  CHECK(o["tensorDataOffset"] == std::to_string(f->data_offset()));
  CHECK(std::stoull(o["tensorDataOffset"].get<std::string>()) % alignment == 0);

  const json& md = o["metadata"];
  CHECK(md.size() == meant.size());
  for (const GgufKv& kv : meant) {
    INFO("key " << kv.key);
    REQUIRE(md.contains(kv.key));
    CHECK(md[kv.key]["type"] == (uint32_t)kv.value.type);
    if (kv.value.type == GgufType::array) CHECK(md[kv.key]["subType"] == (uint32_t)kv.value.array.elem_type);
    CHECK(md[kv.key]["value"] == expected(kv.value));
  }

  const json& ts = o["tensors"];
  REQUIRE(ts.size() == tensors.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const MeantTensor& t = tensors[i];
    INFO("tensor " << t.name);
    CHECK(ts[i]["name"] == t.name);
    json ne = json::array();
    for (int d = t.shape.rank - 1; d >= 0; --d) ne.push_back(std::to_string(t.shape[d]));  // innermost first
    CHECK(ts[i]["shape"] == ne);
    CHECK(ts[i]["dtype"] == ggml_type_of(t.dtype));
    offset = (offset + alignment - 1) / alignment * alignment;
    CHECK(ts[i]["offset"] == std::to_string(offset));
    CHECK(f->tensors()[i].offset == offset);
    offset += TensorDesc::contiguous(t.dtype, t.shape).bytes();
  }
}
}  // namespace

TEST_CASE("a GGUF with every value type, nested arrays, alignment 64 and every tensor type reads back in @huggingface/gguf" * needs(node_oracle())) {
  require_oracle_packages();
  TempDir dir;
  Rng rng(51);
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("general.alignment", 64);
  w.set("t.u8", scalar(GgufType::u8, 200));
  w.set("t.i8", scalar(GgufType::i8, (uint8_t)-100));
  w.set("t.u16", scalar(GgufType::u16, 65000));
  w.set("t.i16", scalar(GgufType::i16, (uint16_t)-30000));
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_f32("t.f32", 0.1f);
  w.set_bool("t.bool", true);
  w.set_string("t.string", "Grüße, ▁world 🦙");
  w.set_u64("t.u64", 18000000000000000000ull);
  w.set("t.i64", GgufValue::of_i64(-9000000000000000000ll));
  w.set("t.f64", GgufValue::of_f64(-1.0 / 3.0));
  w.set("t.arr.u8", packed<uint8_t>(GgufType::u8, {0, 1, 255}));
  w.set("t.arr.i16", packed<int16_t>(GgufType::i16, {-1, 2, -32768}));
  w.set("t.arr.u64", packed<uint64_t>(GgufType::u64, {0, 1ull << 63}));
  w.set("t.arr.f64", packed<double>(GgufType::f64, {0.5, 1e300}));
  w.set("t.arr.bool", packed<uint8_t>(GgufType::boolean, {1, 0, 1}));
  w.set_f32_array("t.arr.f32", {1.5f, -0.0f, 3.25e-8f});
  w.set_string_array("t.arr.string", {"", "▁the", "<0x0A>"});
  w.set("t.arr.empty", packed<int32_t>(GgufType::i32, {}));
  w.set("t.arr.nested", nested());
  const std::vector<MeantTensor> tensors = {
      {"f32", DType::f32, {3, 5}},        {"f16", DType::f16, {4, 8}},     {"bf16", DType::bf16, {2, 16}},
      {"q8_0", DType::q8_0, {2, 64}},     {"q4_0", DType::q4_0, {3, 32}},  {"q4_K", DType::q4_K, {2, 256}},
      {"i8", DType::i8, {7}},             {"i32", DType::i32, {1, 1, 3}},
  };
  for (const auto& t : tensors) {
    const size_t bytes = (size_t)TensorDesc::contiguous(t.dtype, t.shape).bytes();
    std::vector<std::byte> data(bytes);
    for (auto& b : data) b = (std::byte)rng.integer(0, 255);
    REQUIRE(w.add_tensor(t.name, t.dtype, t.shape, std::move(data)).is_ok());
  }
  const std::string path = dir.file("all.gguf");
  REQUIRE(w.write(path).is_ok());
  auto f = GgufFile::open(path);
  REQUIRE(f.has_value());
  check_file(path, f->kvs(), tensors, 64, dir);
  // What was set is what came back, in the order set.
  REQUIRE(f->kvs().size() == 23);
  CHECK(f->kvs()[2].key == "t.u8");
  CHECK(f->kvs()[22].key == "t.arr.nested");
}

TEST_CASE("tessera's converter output (aidreams260K to q8_0, with its vocabulary) reads back in @huggingface/gguf" * needs(node_oracle())) {
  require_oracle_packages();
  TempDir dir;
  auto src = load_llama2c(shared_path("models/aidreams260K.bin"));
  REQUIRE_MESSAGE(src.has_value(), src.status().message());
  auto tok = Tokenizer::load_llama2c(shared_path("models/aidreams260K.tok512.bin"), 512);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  const std::string path = dir.file("q8.gguf");
  REQUIRE(write_model_gguf(*src, &tok->data(), DType::q8_0, path, nullptr).is_ok());
  // What the converter means to write: every tensor in order, 2-D ones in
  // q8_0 unless their rows are not whole blocks (ffn_down's 172: f16), 1-D in
  // f32; the llama keys of the config; the vocabulary whole.
  std::vector<MeantTensor> tensors;
  for (const auto& t : src->tensors) {
    const DType want = t.desc.shape.rank != 2 ? DType::f32 : t.desc.shape.last() % 32 == 0 ? DType::q8_0 : DType::f16;
    tensors.push_back({t.name, want, t.desc.shape});
  }
  auto f = GgufFile::open(path);
  REQUIRE(f.has_value());
  const TransformerConfig& c = src->config;
  auto value_of = [&](const std::string& key) -> const GgufValue& {
    const GgufValue* v = f->find(key);
    REQUIRE_MESSAGE(v != nullptr, key);
    return *v;
  };
  CHECK(value_of("general.architecture").str == "llama");
  CHECK(value_of("llama.embedding_length").as_u64() == (uint64_t)c.dim);
  CHECK(value_of("llama.feed_forward_length").as_u64() == (uint64_t)c.hidden_dim);
  CHECK(value_of("llama.block_count").as_u64() == (uint64_t)c.n_layers);
  CHECK(value_of("llama.attention.head_count").as_u64() == (uint64_t)c.n_heads);
  CHECK(value_of("llama.attention.head_count_kv").as_u64() == (uint64_t)c.n_kv_heads);
  CHECK(value_of("llama.context_length").as_u64() == (uint64_t)c.context_length);
  CHECK(value_of("llama.rope.dimension_count").as_u64() == (uint64_t)c.rope_dims);
  CHECK(value_of("tokenizer.ggml.model").str == "llama");
  CHECK(value_of("tokenizer.ggml.tokens").array.strings == tok->data().tokens);
  CHECK(value_of("tokenizer.ggml.bos_token_id").as_u64() == 1);
  check_file(path, f->kvs(), tensors, 32, dir);
  const json o = read_with_oracle(path, dir);
  CHECK(o["metadata"]["tokenizer.ggml.tokens"]["value"].size() == 512);
  CHECK(o["metadata"]["llama.rope.freq_base"]["value"] == 10000.0);
  CHECK(o["metadata"]["general.file_type"]["value"] == 7);  // llama.cpp's MOSTLY_Q8_0
  int q8 = 0;
  for (const auto& t : o["tensors"]) q8 += t["dtype"] == 8;
  CHECK(q8 == 1 + 6 * c.n_layers);  // token_embd, and per layer q, k, v, o, gate, up
}
