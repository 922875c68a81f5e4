// tokenizer.json loading: the layouts Hugging Face writes, what becomes of
// them as a GGUF vocabulary, and files that are refused (one line naming the
// field).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/formats/convert.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/llama2c_loader.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_json.h"
#include "format_test_util.h"
#include "text_generator.h"
#include "vocab_test_cases.h"

using namespace tessera;
using namespace tessera::testing;
using json = nlohmann::json;

namespace {
void write_json(const std::string& path, const json& j) {
  std::ofstream f(path, std::ios::binary);
  f << j.dump();
}

size_t codepoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Byte offset of the k-th code point.
size_t cp_offset(const std::string& s, size_t k) {
  size_t i = 0;
  for (size_t seen = 0; i < s.size(); ++i)
    if (((unsigned char)s[i] & 0xC0) != 0x80 && seen++ == k) return i;
  return s.size();
}

// The Llama 2 vocabulary of llama-2-tiny-random.gguf laid out as Hugging
// Face's LlamaConverter writes tokenizer.json: vocab, merges from
// SentencePieceExtractor (every split of a normal piece into two pieces,
// ordered by the piece's score, then by the halves' ids), Prepend/Replace ▁.
json llama2_tokenizer_json() {
  auto m = load_gguf_model(shared_path("models/llama-2-tiny-random.gguf"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  const TokenizerData& d = *m->tokenizer;
  std::unordered_map<std::string, int32_t> ids;
  for (int32_t i = 0; i < (int32_t)d.tokens.size(); ++i) ids.emplace(d.tokens[(size_t)i], i);
  struct Merge {
    int32_t left, right;
    float score;
  };
  std::vector<Merge> merges;
  for (int32_t id = 0; id < (int32_t)d.tokens.size(); ++id) {
    if (d.types[(size_t)id] != TokenType::normal) continue;
    const std::string& p = d.tokens[(size_t)id];
    std::vector<Merge> local;
    for (size_t k = 1; k < codepoints(p); ++k) {
      const size_t at = cp_offset(p, k);
      const auto l = ids.find(p.substr(0, at)), r = ids.find(p.substr(at));
      if (l != ids.end() && r != ids.end()) local.push_back({l->second, r->second, d.scores[(size_t)id]});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) { return a.score > b.score; });
  json vocab = json::object(), merge_list = json::array();
  for (int32_t i = 0; i < (int32_t)d.tokens.size(); ++i) vocab[d.tokens[(size_t)i]] = i;
  for (const Merge& mg : merges) merge_list.push_back(d.tokens[(size_t)mg.left] + " " + d.tokens[(size_t)mg.right]);
  json added = json::array();
  for (int i = 0; i < 3; ++i)
    added.push_back({{"id", i}, {"content", d.tokens[(size_t)i]}, {"special", true}, {"normalized", false}});
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}},
                                                              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor", {{"type", "TemplateProcessing"},
                          {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}},
      {"decoder", nullptr},
      {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true}, {"vocab", vocab}, {"merges", merge_list}}},
  };
}

// A byte-level BPE (GPT-2 layout) small enough to reason about: the 256
// byte characters, a few merges, <|endoftext|>.
json tiny_gpt2_json(const std::string& regex) {
  json vocab = json::object();
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) {
    // GPT-2's table: printable Latin-1 spells itself, the rest U+0100 on.
    static int next = 256;
    const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    std::string s;
    const uint32_t cp = self ? (uint32_t)b : (uint32_t)next++;
    if (cp < 0x80) s += (char)cp;
    else { s += (char)(0xC0 | (cp >> 6)); s += (char)(0x80 | (cp & 0x3F)); }
    pieces.push_back(s);
  }
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = (int)i;
  const std::vector<std::string> merged = {"Ġt", "he", "Ġthe", "ll", "llo", "Ġhe", "Ġhello"};
  json merges = {"Ġ t", "h e", "Ġt he", "l l", "ll o", "Ġ he", "Ġhe llo"};
  int id = 256;
  for (const auto& m : merged) vocab[m] = id++;
  json pre = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}},
                                                        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  return {{"added_tokens", {{{"id", id}, {"content", "<|endoftext|>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
}

const char* kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
}  // namespace

TEST_CASE("the Llama 2 vocabulary as Hugging Face lays out tokenizer.json gives llama.cpp's ids on llama-spm") {
  TempDir dir;
  write_json(dir.file("tokenizer.json"), llama2_tokenizer_json());
  auto tok = Tokenizer::load_hf_json(dir.file("tokenizer.json"));
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->algorithm() == TokenizerAlgorithm::spm);
  CHECK(tok->vocab_size() == 32000);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->data().unk_id == 0);
  CHECK(tok->data().types[0] == TokenType::unknown);
  CHECK(tok->data().types[1] == TokenType::control);
  CHECK(tok->data().types[3 + 0x41] == TokenType::byte);
  CHECK(tok->data().add_bos);
  CHECK(tok->data().add_space_prefix);
  for (const VocabCase& c : read_vocab_cases(shared_path("reference/tokenizer/llama-spm.inp"),
                                             shared_path("reference/tokenizer/llama-spm.out"))) {
    INFO("input: '" << c.text << "'");
    CHECK(join(tok->encode(c.text, false)) == join(c.ids));
  }
  // Beyond llama.cpp's cases: the scores rebuilt from the merge order give
  // the GGUF's own tokenization on generated text too.
  auto m = load_gguf_model(shared_path("models/llama-2-tiny-random.gguf"));
  REQUIRE(m.has_value());
  auto gguf = Tokenizer::from_data(*m->tokenizer, m->source);
  REQUIRE(gguf.has_value());
  TextGenerator gen(43);
  int same = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string t = gen.text();
    const bool eq = tok->encode(t, false) == gguf->encode(t, false);
    same += eq;
    if (!eq) MESSAGE("differs: " << json(t).dump());
  }
  CHECK(same == 1000);
  // load_file tells tokenizer.json from tokenizer.bin by content.
  auto again = Tokenizer::load_file(dir.file("tokenizer.json"), 32000);
  REQUIRE(again.has_value());
  CHECK(again->algorithm() == TokenizerAlgorithm::spm);
}

TEST_CASE("a byte-level tokenizer.json: merges by rank, the gpt-2 pre-tokenizer, and the same ids from its GGUF") {
  TempDir dir;
  write_json(dir.file("tokenizer.json"), tiny_gpt2_json(kGpt2Regex));
  auto tok = Tokenizer::load_hf_json(dir.file("tokenizer.json"));
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->algorithm() == TokenizerAlgorithm::byte_bpe);
  CHECK(tok->data().pre == "gpt-2");
  CHECK(tok->data().merges.size() == 7);
  CHECK(tok->bos_id() == 263);  // <|endoftext|>, by name
  CHECK_FALSE(tok->data().add_bos);  // llama.cpp's default for gpt-2
  // " the" → Ġthe; " hello" → Ġhello; "'s" is its own word; digits are bytes.
  CHECK(tok->encode(" the hello", false) == std::vector<int32_t>{258, 262});
  // (A byte's piece has the byte's id here: Ġ, the space, is 32.)
  CHECK(tok->encode("the's 42", false) == std::vector<int32_t>{'t', 257, '\'', 's', ' ', '4', '2'});
  CHECK(tok->detokenize(tok->encode("the's 42\n\tÿ€", false)) == "the's 42\n\tÿ€");
  CHECK(tok->encode("<|endoftext|>", false).size() == 13);  // plain text
  CHECK(tok->encode("<|endoftext|>", EncodeOptions{false, false, true}) == std::vector<int32_t>{263});

  // Embedded in a GGUF and read back as tokenizer.ggml.*: the same ids.
  auto src = load_llama2c(shared_path("models/stories260K.bin"));
  REQUIRE(src.has_value());
  TokenizerData data = tok->data();
  // stories260K's 512-row embedding fits this 264-token vocabulary.
  REQUIRE(write_model_gguf(*src, &data, DType::f32, dir.file("m.gguf"), nullptr).is_ok());
  auto m = load_gguf_model(dir.file("m.gguf"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  REQUIRE(m->tokenizer.has_value());
  CHECK(m->tokenizer->model == "gpt2");
  CHECK(m->tokenizer->pre == "gpt-2");
  auto back = Tokenizer::from_data(*m->tokenizer, m->source);
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  for (const std::string t : {" the hello", "the's 42", "x  \n\n y", "Ölf 12345"})
    CHECK(back->encode(t, false) == tok->encode(t, false));
}

TEST_CASE("tokenizer.json files that are refused name the field") {
  TempDir dir;
  const std::string p = dir.file("tokenizer.json");
  auto refused = [&](const json& j, std::initializer_list<std::string> parts) {
    write_json(p, j);
    check_message(Tokenizer::load_hf_json(p).status(), parts);
  };
  {
    std::ofstream f(p);
    f << "{ not json";
  }
  check_message(Tokenizer::load_hf_json(p).status(), {p, "not valid JSON"});
  json j = tiny_gpt2_json(kGpt2Regex);
  j["model"]["type"] = "Unigram";
  refused(j, {p, "field 'model.type'", "Unigram", "expected 'BPE'"});
  refused(tiny_gpt2_json("\\p{N}+"), {p, "field 'pre_tokenizer'", "regex", "gpt-2", "llama-bpe"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["model"]["merges"][2] = "nospace";
  refused(j, {p, "field 'model.merges'", "element 2", "no space"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["model"]["merges"][1] = 7;
  refused(j, {p, "field 'model.merges'", "element 1"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["model"]["vocab"] = json::array();
  refused(j, {p, "field 'model.vocab'"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["model"]["vocab"]["h"] = "seven";
  refused(j, {p, "field 'model.vocab'", "'h'"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["added_tokens"][0]["id"] = 5;  // id 5 is already a byte piece
  refused(j, {p, "field 'added_tokens'", "id 5"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["pre_tokenizer"] = nullptr;
  refused(j, {p, "field 'normalizer'"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["pre_tokenizer"]["pretokenizers"] = 3;
  refused(j, {p, "field 'normalizer'"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["model"].erase("merges");
  refused(j, {p, "model.merges"});
  j = tiny_gpt2_json(kGpt2Regex);
  j["model"]["type"] = 3;
  refused(j, {p, "unexpected type"});
}
