// Corrupt GGUF files, made byte by byte: each is refused with one line that
// names the file and the field, key or tensor at fault.
#include <doctest/doctest.h>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/load_model.h"
#include "format_test_util.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
ByteBuilder header(uint32_t version, uint64_t n_tensors, uint64_t n_kvs) {
  ByteBuilder b;
  b.raw("GGUF").u32(version).u64(n_tensors).u64(n_kvs);
  return b;
}

// A tensor info: name, 1-D of `ne` elements, ggml type, offset.
void tensor_info(ByteBuilder& b, const std::string& name, uint64_t ne, uint32_t type, uint64_t offset) {
  b.str(name).u32(1).u64(ne).u32(type).u64(offset);
}

Status open_bytes(const TempDir& dir, const std::string& name, const std::vector<uint8_t>& bytes,
                  std::string* path) {
  *path = dir.file(name);
  write_bytes(*path, bytes);
  return GgufFile::open(*path).status();
}
}  // namespace

TEST_CASE("an empty file is refused as GGUF and as a model") {
  TempDir dir;
  std::string path;
  check_message(open_bytes(dir, "empty.gguf", {}, &path), {dir.file("empty.gguf"), "empty", "GGUF"});
  check_message(load_model(path).status(), {path, "empty"});
}

TEST_CASE("a missing file says so") {
  check_message(load_model("/nonexistent/dir/model.gguf").status(), {"/nonexistent/dir/model.gguf", "No such file"});
  check_message(GgufFile::open("/nonexistent/x.gguf").status(), {"/nonexistent/x.gguf", "cannot open"});
}

TEST_CASE("a truncated GGUF header is refused") {
  TempDir dir;
  std::string path;
  ByteBuilder b;
  b.raw("GGUF").u32(3).u32(0);
  check_message(open_bytes(dir, "short.gguf", b.bytes, &path), {dir.file("short.gguf"), "12 bytes", "header", "24"});
}

TEST_CASE("a wrong magic is refused, with the bytes found") {
  TempDir dir;
  std::string path;
  ByteBuilder b;
  b.raw("GGML").u32(3).u64(0).u64(0);
  check_message(open_bytes(dir, "magic.gguf", b.bytes, &path), {dir.file("magic.gguf"), "magic", "'GGML'", "expected 'GGUF'"});
}

TEST_CASE("GGUF version 99 is refused, versions 2 and 3 are read") {
  TempDir dir;
  std::string path;
  check_message(open_bytes(dir, "v99.gguf", header(99, 0, 0).bytes, &path), {dir.file("v99.gguf"), "version 99", "expected 2 or 3"});
  CHECK(open_bytes(dir, "v2.gguf", header(2, 0, 0).bytes, &path).is_ok());
  CHECK(open_bytes(dir, "v3.gguf", header(3, 0, 0).bytes, &path).is_ok());
}

TEST_CASE("a string length past the end of the file is refused, in a key name and in a value") {
  TempDir dir;
  std::string path;
  ByteBuilder a = header(3, 0, 1);
  a.u64(1000000).raw("general");
  check_message(open_bytes(dir, "keylen.gguf", a.bytes, &path), {dir.file("keylen.gguf"), "key #0 name", "string length 1000000", "past the end"});
  ByteBuilder b = header(3, 0, 1);
  b.str("general.name").u32(8).u64(~0ull).raw("x");
  check_message(open_bytes(dir, "vallen.gguf", b.bytes, &path),
                {dir.file("vallen.gguf"), "key 'general.name'", "string length 18446744073709551615", "past the end"});
}

TEST_CASE("an array count of 2^60 is refused before anything is allocated") {
  TempDir dir;
  std::string path;
  for (uint32_t elem : {8u, 4u, 9u}) {  // string, u32, nested array
    ByteBuilder b = header(3, 0, 1);
    b.str("tokenizer.ggml.tokens").u32(9).u32(elem).u64(1ull << 60).zeros(64);
    check_message(open_bytes(dir, "count.gguf", b.bytes, &path),
                  {dir.file("count.gguf"), "key 'tokenizer.ggml.tokens'", "array count 1152921504606846976"});
  }
}

TEST_CASE("arrays nested past the depth limit and unknown value types are refused") {
  TempDir dir;
  std::string path;
  ByteBuilder b = header(3, 0, 1);
  b.str("deep").u32(9);
  for (int i = 0; i < 20; ++i) b.u32(9).u64(1);
  b.u32(4).u64(0);
  check_message(open_bytes(dir, "deep.gguf", b.bytes, &path), {dir.file("deep.gguf"), "key 'deep'", "nested"});
  ByteBuilder c = header(3, 0, 1);
  c.str("odd").u32(13).u32(0);
  check_message(open_bytes(dir, "type.gguf", c.bytes, &path), {dir.file("type.gguf"), "key 'odd'", "value type 13"});
}

TEST_CASE("counts that cannot fit in the file are refused") {
  TempDir dir;
  std::string path;
  check_message(open_bytes(dir, "kvs.gguf", header(3, 0, 1ull << 62).bytes, &path), {dir.file("kvs.gguf"), "metadata_kv_count"});
  check_message(open_bytes(dir, "tensors.gguf", header(3, ~0ull, 0).bytes, &path), {dir.file("tensors.gguf"), "tensor_count"});
}

TEST_CASE("a tensor whose data runs past the end of the file is refused") {
  TempDir dir;
  std::string path;
  ByteBuilder b = header(3, 1, 0);
  tensor_info(b, "blk.3.attn_q.weight", 64, 0, 0);
  b.pad_to(32).zeros(100);
  check_message(open_bytes(dir, "past.gguf", b.bytes, &path),
                {dir.file("past.gguf"), "tensor 'blk.3.attn_q.weight'", "256 bytes", "runs past the end of the file"});
  ByteBuilder c = header(3, 1, 0);
  tensor_info(c, "w", 4, 0, 1ull << 63);
  c.pad_to(32).zeros(16);
  check_message(open_bytes(dir, "far.gguf", c.bytes, &path), {dir.file("far.gguf"), "tensor 'w'", "past the end"});
}

TEST_CASE("a misaligned tensor offset is refused") {
  TempDir dir;
  std::string path;
  ByteBuilder b = header(3, 1, 0);
  tensor_info(b, "w", 4, 0, 4);
  b.pad_to(32).zeros(64);
  check_message(open_bytes(dir, "align.gguf", b.bytes, &path), {dir.file("align.gguf"), "tensor 'w'", "offset 4", "alignment 32"});
}

TEST_CASE("two overlapping tensors are refused, both named") {
  TempDir dir;
  std::string path;
  ByteBuilder b = header(3, 2, 0);
  tensor_info(b, "a", 16, 0, 0);   // 64 bytes at 0
  tensor_info(b, "b", 16, 0, 32);  // 64 bytes at 32
  b.pad_to(32).zeros(128);
  check_message(open_bytes(dir, "overlap.gguf", b.bytes, &path), {dir.file("overlap.gguf"), "'a'", "'b'", "overlap"});
}

TEST_CASE("an unsupported ggml type is refused with its name and id, an unknown one with its id, listing what is supported") {
  TempDir dir;
  std::string path;
  const std::pair<uint32_t, std::string> cases[] = {{16u, "ggml type IQ2_XXS (16)"}, {15u, "ggml type Q8_K (15)"},
                                                     {99u, "ggml type 99"}};
  for (const auto& [type, label] : cases) {
    ByteBuilder b = header(3, 1, 0);
    tensor_info(b, "w", 32, type, 0);
    b.pad_to(32).zeros(256);
    check_message(open_bytes(dir, "type.gguf", b.bytes, &path),
                  {dir.file("type.gguf"), "tensor 'w'", label, "not supported", "Q6_K 14", "IQ4_XS 23"});
  }
}

TEST_CASE("bad tensor infos are refused: n_dims, element-count overflow, partial blocks, duplicates") {
  TempDir dir;
  std::string path;
  ByteBuilder a = header(3, 1, 0);
  a.str("w").u32(5).zeros(64);
  check_message(open_bytes(dir, "dims.gguf", a.bytes, &path), {dir.file("dims.gguf"), "tensor 'w'", "n_dims 5"});
  ByteBuilder b = header(3, 1, 0);
  b.str("w").u32(2).u64(1ull << 40).u64(1ull << 40).u32(0).u64(0).zeros(32);
  check_message(open_bytes(dir, "overflow.gguf", b.bytes, &path), {dir.file("overflow.gguf"), "tensor 'w'", "overflow"});
  ByteBuilder c = header(3, 1, 0);
  tensor_info(c, "w", 33, 8, 0);
  c.pad_to(32).zeros(64);
  check_message(open_bytes(dir, "blocks.gguf", c.bytes, &path), {dir.file("blocks.gguf"), "tensor 'w'", "33", "q8_0"});
  ByteBuilder d = header(3, 2, 0);
  tensor_info(d, "w", 8, 0, 0);
  tensor_info(d, "w", 8, 0, 32);
  d.pad_to(32).zeros(64);
  check_message(open_bytes(dir, "dup.gguf", d.bytes, &path), {dir.file("dup.gguf"), "tensor 'w'", "twice"});
}

TEST_CASE("a bad general.alignment is refused") {
  TempDir dir;
  std::string path;
  ByteBuilder a = header(3, 0, 1);
  a.str("general.alignment").u32(4).u32(24);
  check_message(open_bytes(dir, "a24.gguf", a.bytes, &path), {dir.file("a24.gguf"), "general.alignment", "24", "power of two"});
  ByteBuilder b = header(3, 0, 1);
  b.str("general.alignment").u32(8).str("32");
  check_message(open_bytes(dir, "astr.gguf", b.bytes, &path), {dir.file("astr.gguf"), "general.alignment", "string", "u32"});
}

TEST_CASE("every truncation and random corruption of a valid GGUF file fails cleanly or parses") {
  // Run under ASan/UBSan this is the check that no read leaves the file.
  Rng rng(3);
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "c"});
  w.set_f32_array("tokenizer.ggml.scores", {0, 1, 2});
  const std::vector<std::byte> x(4 * 64), y(34 * 2);
  REQUIRE(w.add_tensor("x", DType::f32, {4, 16}, std::span<const std::byte>(x)).is_ok());
  REQUIRE(w.add_tensor("y", DType::q8_0, {64}, std::span<const std::byte>(y)).is_ok());
  const std::string good = dir.file("good.gguf");
  REQUIRE(w.write(good).is_ok());
  const std::vector<uint8_t> bytes = read_bytes(good);
  const std::string path = dir.file("bad.gguf");
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + (int64_t)n));
    const Status s = GgufFile::open(path).status();
    INFO("truncated to " << n << ": " << s.message());
    if (!s.is_ok()) CHECK(s.message().find('\n') == std::string::npos);
  }
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> bad = bytes;
    for (int k = rng.integer(1, 4); k > 0; --k) bad[(size_t)rng.integer(0, (int)bad.size() - 1)] = (uint8_t)rng.integer(0, 255);
    write_bytes(path, bad);
    const Status s = GgufFile::open(path).status();
    if (!s.is_ok()) CHECK(s.message().rfind(path + ": ", 0) == 0);
  }
}
