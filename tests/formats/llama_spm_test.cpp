// llama.cpp's own tokenizer cases for the Llama 2 vocabulary
// (../shared/reference/tokenizer/llama-spm.*): every input, without BOS,
// gives exactly llama.cpp's ids — from the vocabulary inside
// llama-2-tiny-random.gguf (written by llama.cpp's converter) — and the ids
// detokenize back to the input.
#include <doctest/doctest.h>

#include "engine/models/gguf_model_loader.h"
#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"
#include "vocab_test_cases.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
const std::vector<VocabCase>& spm_cases() {
  static const auto cases = read_vocab_cases(shared_path("reference/tokenizer/llama-spm.inp"),
                                             shared_path("reference/tokenizer/llama-spm.out"));
  return cases;
}

Tokenizer gguf_tokenizer() {
  auto m = load_gguf_model(shared_path("models/llama-2-tiny-random.gguf"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  REQUIRE(m->tokenizer.has_value());
  auto tok = Tokenizer::from_data(*m->tokenizer, m->source);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  return *tok;
}
}  // namespace

TEST_CASE("llama-spm: every llama.cpp case tokenizes exactly as llama.cpp, from the GGUF's vocabulary") {
  const Tokenizer tok = gguf_tokenizer();
  CHECK(tok.algorithm() == TokenizerAlgorithm::spm);
  REQUIRE(spm_cases().size() == 25);
  int passed = 0;
  for (const VocabCase& c : spm_cases()) {
    INFO("input: '" << c.text << "'");
    const auto ids = tok.encode(c.text, false);
    CHECK(join(ids) == join(c.ids));
    passed += ids == c.ids;
    CHECK(tok.detokenize(ids) == c.text);
    // With BOS: the same ids after it, and the same text back.
    const auto with_bos = tok.encode(c.text, true);
    REQUIRE(!with_bos.empty());
    CHECK(with_bos[0] == 1);
    CHECK(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()) == c.ids);
    CHECK(tok.detokenize(with_bos) == c.text);
  }
  MESSAGE("llama-spm: " << passed << "/" << spm_cases().size() << " cases exact");
}

// run.c's algorithm on llama2.c's tokenizer.bin (the same vocabulary) is kept
// for the llama2.c references. It agrees with llama.cpp on all of llama.cpp's
// cases, and differs only where the rules do (docs/formats.md), pinned here.
TEST_CASE("llama-spm: run.c's rules on llama2.tokenizer.bin agree with llama.cpp's on every case, where they differ") {
  auto runc = Tokenizer::load_llama2c(shared_path("models/llama2.tokenizer.bin"), 32000);
  REQUIRE_MESSAGE(runc.has_value(), runc.status().message());
  CHECK(runc->algorithm() == TokenizerAlgorithm::llama2c);
  for (const VocabCase& c : spm_cases()) {
    INFO("input: '" << c.text << "'");
    CHECK(join(runc->encode(c.text, false)) == join(c.ids));
  }
  const Tokenizer spm = gguf_tokenizer();
  // A literal U+2581 is a space to llama.cpp (SentencePiece's escaping), a
  // character without a piece to run.c.
  CHECK(spm.encode("a\xE2\x96\x81" "b", false) == spm.encode("a b", false));
  CHECK(runc->encode("a\xE2\x96\x81" "b", false) != spm.encode("a b", false));
  // A lead byte announcing 3 bytes takes the next 2 whatever they are in
  // llama.cpp ("\xE2\x82a" is one symbol, so 3 byte tokens); run.c takes only
  // continuation bytes ("\xE2\x82" then "a").
  CHECK(join(spm.encode("\xE2\x82" "a", false)) == "29871 229 133 100");
  CHECK(join(runc->encode("\xE2\x82" "a", false)) == "29871 229 133 29874");
  // The text "</s>" is plain text to both without parse_special; with it,
  // llama.cpp's rules give the control token.
  CHECK(spm.encode("</s>", false) == runc->encode("</s>", false));
  CHECK(spm.encode("</s>", EncodeOptions{false, false, true}) == std::vector<int32_t>{2});
  CHECK(runc->encode("</s>", EncodeOptions{false, false, true}) == runc->encode("</s>", false));
}
