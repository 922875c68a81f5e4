// Model files that are well-formed containers but wrong as models: each is
// refused with one line naming the file and the key, field or tensor.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>

#include "engine/formats/convert.h"
#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/llama2c_loader.h"
#include "engine/models/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
// aidreams260K with its vocabulary as GGUF; `edit` changes the writer
// re-emitting it, and the result is loaded.
Status load_edited(const TempDir& dir, const std::string& name, const std::function<void(GgufWriter&)>& edit,
                   std::string* path) {
  const std::string base = dir.file("base.gguf");
  auto src = load_llama2c(shared_path("models/aidreams260K.bin"));
  REQUIRE(src.has_value());
  auto tok = Tokenizer::load_llama2c(shared_path("models/aidreams260K.tok512.bin"), 512);
  REQUIRE(tok.has_value());
  REQUIRE(write_model_gguf(*src, &tok->data(), DType::f32, base, nullptr).is_ok());
  auto f = GgufFile::open(base);
  REQUIRE(f.has_value());
  GgufWriter w = gguf_writer_from(*f);
  edit(w);
  *path = dir.file(name);
  REQUIRE(w.write(*path).is_ok());
  return load_gguf_model(*path).status();
}

// A copy of stories260K.bin with header field `index` (0 dim .. 6 seq_len) set to `value`.
std::string patched_llama2c(const TempDir& dir, int index, int32_t value) {
  std::vector<uint8_t> raw = read_bytes(shared_path("models/stories260K.bin"));
  std::memcpy(raw.data() + 4 * index, &value, 4);
  const std::string path = dir.file("patched" + std::to_string(index) + ".bin");
  write_bytes(path, raw);
  return path;
}
}  // namespace

TEST_CASE("the unedited base file loads, so each edit below is what is refused") {
  TempDir dir;
  std::string path;
  CHECK(load_edited(dir, "same.gguf", [](GgufWriter&) {}, &path).is_ok());
}

TEST_CASE("general.architecture = gpt-neox is refused in one line listing the supported architectures") {
  TempDir dir;
  std::string path;
  const Status s = load_edited(dir, "neox.gguf", [](GgufWriter& w) { w.set_string("general.architecture", "gpt-neox"); }, &path);
  check_message(s, {path + ": key 'general.architecture' is 'gpt-neox'; supported: llama, qwen2, qwen3, gemma2, phi3"});
}

TEST_CASE("llama.block_count stored as a string is refused as a key of the wrong type") {
  TempDir dir;
  std::string path;
  const Status s = load_edited(dir, "bc.gguf", [](GgufWriter& w) { w.set_string("llama.block_count", "4"); }, &path);
  check_message(s, {path, "key 'llama.block_count'", "is string", "expected an unsigned integer"});
}

TEST_CASE("tokenizer scores and token types must be as long as the tokens") {
  TempDir dir;
  std::string path;
  Status s = load_edited(dir, "scores.gguf", [](GgufWriter& w) { w.set_f32_array("tokenizer.ggml.scores", std::vector<float>(511)); }, &path);
  check_message(s, {path, "key 'tokenizer.ggml.scores'", "511", "512", "tokenizer.ggml.tokens"});
  s = load_edited(dir, "types.gguf", [](GgufWriter& w) { w.set_i32_array("tokenizer.ggml.token_type", {1, 1}); }, &path);
  check_message(s, {path, "key 'tokenizer.ggml.token_type'", "2 elements", "512"});
}

TEST_CASE("missing keys, missing tensors and wrong shapes are refused by name") {
  TempDir dir;
  std::string path;
  Status s = load_edited(dir, "nokey.gguf", [](GgufWriter& w) { w.remove("llama.embedding_length"); }, &path);
  check_message(s, {path, "key 'llama.embedding_length'", "missing"});
  s = load_edited(dir, "kv.gguf", [](GgufWriter& w) { w.set_u32("llama.attention.head_count_kv", 3); }, &path);
  check_message(s, {path, "'llama.attention.head_count_kv' (3)", "'llama.attention.head_count' (4)"});
  s = load_edited(dir, "rope.gguf", [](GgufWriter& w) { w.set_u32("llama.rope.dimension_count", 17); }, &path);
  check_message(s, {path, "key 'llama.rope.dimension_count' is 17", "head_dim 16"});
  s = load_edited(dir, "bos.gguf", [](GgufWriter& w) { w.set_u32("tokenizer.ggml.bos_token_id", 600); }, &path);
  check_message(s, {path, "key 'tokenizer.ggml.bos_token_id'", "600", "512"});
  s = load_edited(dir, "ff.gguf", [](GgufWriter& w) { w.set_u32("llama.feed_forward_length", 171); }, &path);
  check_message(s, {path, "tensor 'blk.0.ffn_gate.weight'", "[172, 64]", "expected [171, 64]"});
  s = load_edited(dir, "layers.gguf", [](GgufWriter& w) { w.set_u32("llama.block_count", 5); }, &path);
  check_message(s, {path, "tensor 'blk.4.attn_norm.weight'", "missing"});
}

TEST_CASE("a llama2.c file truncated by one byte is refused with both sizes") {
  TempDir dir;
  std::vector<uint8_t> raw = read_bytes(shared_path("models/stories260K.bin"));
  raw.pop_back();
  const std::string path = dir.file("short.bin");
  write_bytes(path, raw);
  check_message(load_llama2c(path).status(), {path, "1056539 bytes", "implies 1056540"});
  check_message(load_model(path).status(), {path, "1056539 bytes"});
  raw.resize(27);
  write_bytes(path, raw);
  check_message(load_llama2c(path).status(), {path, "27 bytes", "header"});
}

TEST_CASE("llama2.c headers that break the model's relations are refused naming the field") {
  TempDir dir;
  std::string p = patched_llama2c(dir, 3, 0);
  check_message(load_llama2c(p).status(), {p, "'n_heads' is 0"});
  p = patched_llama2c(dir, 3, 5);
  check_message(load_llama2c(p).status(), {p, "'dim' (64) is not divisible by 'n_heads' (5)"});
  p = patched_llama2c(dir, 4, 3);
  check_message(load_llama2c(p).status(), {p, "'n_heads' (8) is not divisible by 'n_kv_heads' (3)"});
  p = patched_llama2c(dir, 5, INT32_MIN);
  check_message(load_llama2c(p).status(), {p, "'vocab_size'", "at most"});
  p = patched_llama2c(dir, 0, 1 << 30);
  check_message(load_llama2c(p).status(), {p, "'dim'", "at most"});
  p = patched_llama2c(dir, 6, -1);
  check_message(load_llama2c(p).status(), {p, "'seq_len' is -1"});
}

TEST_CASE("a truncated or overlong tokenizer.bin is refused") {
  TempDir dir;
  std::vector<uint8_t> raw = read_bytes(shared_path("models/aidreams260K.tok512.bin"));
  const std::string path = dir.file("tok.bin");
  write_bytes(path, std::vector<uint8_t>(raw.begin(), raw.end() - 1));
  check_message(Tokenizer::load_llama2c(path, 512).status(), {path, "token 511", "past the end"});
  check_message(Tokenizer::load_llama2c(shared_path("models/aidreams260K.tok512.bin"), 511).status(),
                {"aidreams260K.tok512.bin", "bytes follow", "511 tokens"});
  check_message(Tokenizer::load_llama2c(path, 1 << 30).status(), {path, "too short"});
}
