// GGUF vocabularies that are wrong in the ways llama.cpp-made files can be:
// keys of the wrong type, a SentencePiece vocabulary without scores, a
// byte-level one without merges or with an unknown pre-tokenizer. Each is
// refused with one line naming the file and the key.
#include <doctest/doctest.h>

#include <functional>

#include "engine/formats/convert.h"
#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/llama2c_loader.h"
#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
// aidreams260K with its vocabulary as GGUF, edited, then loaded and its
// tokenizer built, as `tessera run` would.
Status open_edited(const TempDir& dir, const std::function<void(GgufWriter&)>& edit, std::string* path) {
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
  static int n = 0;
  *path = dir.file("edited" + std::to_string(n++) + ".gguf");
  REQUIRE(w.write(*path).is_ok());
  TS_ASSIGN_OR_RETURN(ModelWeights m, load_gguf_model(*path));
  if (!m.tokenizer) return Status::ok();
  return Tokenizer::from_data(*m.tokenizer, *path).status();
}

// Turns the aidreams vocabulary into a (tiny, made-up) byte-level one.
void make_gpt2(GgufWriter& w) {
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2");
  w.set_string_array("tokenizer.ggml.merges", {"a b", "c d"});
}
}  // namespace

TEST_CASE("tokenizer keys of the wrong type are refused naming the key and both types") {
  TempDir dir;
  std::string p;
  struct Edit {
    std::function<void(GgufWriter&)> edit;
    std::vector<std::string> parts;
  };
  const std::vector<Edit> edits = {
      {[](GgufWriter& w) { w.set_u32("tokenizer.ggml.tokens", 5); }, {"key 'tokenizer.ggml.tokens'", "is u32", "array<string>"}},
      {[](GgufWriter& w) { w.set_string_array("tokenizer.ggml.scores", std::vector<std::string>(512, "x")); },
       {"key 'tokenizer.ggml.scores'", "array<string>", "expected array<f32>"}},
      {[](GgufWriter& w) { w.set_f32_array("tokenizer.ggml.token_type", std::vector<float>(512, 1.0f)); },
       {"key 'tokenizer.ggml.token_type'", "array<f32>", "expected array<i32>"}},
      {[](GgufWriter& w) { w.set_string("tokenizer.ggml.bos_token_id", "1"); },
       {"key 'tokenizer.ggml.bos_token_id'", "is string", "unsigned integer"}},
      {[](GgufWriter& w) { w.set_u32("tokenizer.ggml.add_bos_token", 1); }, {"key 'tokenizer.ggml.add_bos_token'", "is u32", "expected bool"}},
      {[](GgufWriter& w) { w.set_u32("tokenizer.ggml.model", 1); }, {"key 'tokenizer.ggml.model'", "is u32", "expected string"}},
      {[](GgufWriter& w) { w.set_string("llama.rope.freq_base", "1e4"); }, {"key 'llama.rope.freq_base'", "is string", "expected f32"}},
      {[](GgufWriter& w) { w.set_string("llama.attention.layer_norm_rms_epsilon", "x"); },
       {"key 'llama.attention.layer_norm_rms_epsilon'", "is string"}},
      {[](GgufWriter& w) { w.set_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(512, 9)); },
       {"key 'tokenizer.ggml.token_type'", "element 0 is 9", "0..6"}},
      {[](GgufWriter& w) { w.set_u32("tokenizer.ggml.eos_token_id", 512); }, {"key 'tokenizer.ggml.eos_token_id'", "512", "below 512"}},
  };
  for (const Edit& e : edits) {
    const Status s = open_edited(dir, e.edit, &p);
    INFO(s.message());
    std::initializer_list<std::string> none{};
    check_message(s, none);
    CHECK(s.message().find(p) != std::string::npos);
    for (const auto& part : e.parts) CHECK_MESSAGE(s.message().find(part) != std::string::npos, "missing '" << part << "'");
  }
}

TEST_CASE("a SentencePiece vocabulary without scores is refused, a byte-level one needs none") {
  TempDir dir;
  std::string p;
  Status s = open_edited(dir, [](GgufWriter& w) { w.remove("tokenizer.ggml.scores"); }, &p);
  check_message(s, {p, "key 'tokenizer.ggml.scores' is missing", "'llama'", "one score per token"});
  s = open_edited(dir, [](GgufWriter& w) { make_gpt2(w); w.remove("tokenizer.ggml.scores"); }, &p);
  CHECK_MESSAGE(s.is_ok(), s.message());
}

TEST_CASE("a byte-level vocabulary without merges, with a bad merge or an unknown pre-tokenizer is refused") {
  TempDir dir;
  std::string p;
  Status s = open_edited(dir, [](GgufWriter& w) { make_gpt2(w); w.remove("tokenizer.ggml.merges"); }, &p);
  check_message(s, {p, "key 'tokenizer.ggml.merges' is missing", "gpt2"});
  s = open_edited(dir, [](GgufWriter& w) { make_gpt2(w); w.set_string_array("tokenizer.ggml.merges", {"a b", "ab"}); }, &p);
  check_message(s, {p, "key 'tokenizer.ggml.merges' element 1", "no space"});
  s = open_edited(dir, [](GgufWriter& w) { make_gpt2(w); w.set_string("tokenizer.ggml.pre", "deepseek-coder"); }, &p);
  check_message(s, {p, "key 'tokenizer.ggml.pre' is 'deepseek-coder'", "gpt-2", "llama-bpe"});
  s = open_edited(dir, [](GgufWriter& w) { make_gpt2(w); w.remove("tokenizer.ggml.pre"); }, &p);
  check_message(s, {p, "key 'tokenizer.ggml.pre' is missing"});
  s = open_edited(dir, [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "bert"); }, &p);
  check_message(s, {p, "tokenizer model 'bert' is not supported", "'llama'", "'gpt2'"});
}

TEST_CASE("llama.cpp's tokenizer defaults when keys are absent: SPM adds BOS and a space prefix, gpt2 neither") {
  TempDir dir;
  std::string p;
  auto load = [&](const std::function<void(GgufWriter&)>& edit) {
    REQUIRE(open_edited(dir, edit, &p).is_ok());
    auto m = load_gguf_model(p);
    REQUIRE(m.has_value());
    return *m->tokenizer;
  };
  const auto strip = [](GgufWriter& w) {
    for (const char* k : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                          "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix"})
      w.remove(k);
  };
  TokenizerData d = load(strip);
  CHECK(d.bos_id == 1);
  CHECK(d.eos_id == 2);
  CHECK(d.unk_id == 0);
  CHECK(d.add_bos);
  CHECK_FALSE(d.add_eos);
  CHECK(d.add_space_prefix);
  d = load([&](GgufWriter& w) { strip(w); make_gpt2(w); });
  CHECK(d.bos_id == 11);
  CHECK(d.eos_id == 11);
  CHECK(d.unk_id == -1);
  CHECK_FALSE(d.add_bos);
  CHECK_FALSE(d.add_space_prefix);
  d = load([&](GgufWriter& w) { strip(w); make_gpt2(w); w.set_string("tokenizer.ggml.pre", "llama-bpe"); });
  CHECK(d.add_bos);
  d = load([&](GgufWriter& w) { w.set_bool("tokenizer.ggml.add_bos_token", false); w.set_bool("tokenizer.ggml.add_eos_token", true); });
  CHECK_FALSE(d.add_bos);
  CHECK(d.add_eos);
}
