// The tokenizer against run.c's own output in ../shared/reference: encoding
// a prompt gives the ids run.c fed, and decoding the ids gives what it printed.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>

#include "engine/formats/convert.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/llama2c_loader.h"
#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
struct Case {
  std::string prompt;
  std::vector<int32_t> full_ids;
  std::string printed;
};

std::vector<Case> read_tsv(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    REQUIRE_MESSAGE((t1 != std::string::npos && t2 != std::string::npos), "bad line in " << path);
    Case c;
    c.prompt = line.substr(0, t1);
    std::stringstream ids(line.substr(t1 + 1, t2 - t1 - 1));
    for (std::string id; std::getline(ids, id, ',');) c.full_ids.push_back(std::stoi(id));
    c.printed = nlohmann::json::parse(line.substr(t2 + 1)).get<std::string>();
    cases.push_back(std::move(c));
  }
  REQUIRE_FALSE(cases.empty());
  return cases;
}

void check_against(const Tokenizer& tok, const std::string& tsv) {
  for (const Case& c : read_tsv(shared_path(tsv))) {
    INFO("prompt: '" << c.prompt << "'");
    const std::vector<int32_t> ids = tok.encode(c.prompt, true);
    // BOS, the dummy-prefix space for a non-empty prompt, then at most one id per byte.
    CHECK(ids.size() >= (c.prompt.empty() ? 1u : 2u));
    CHECK(ids.size() <= 2 + c.prompt.size());
    REQUIRE(ids.size() <= c.full_ids.size());
    CHECK(std::vector<int32_t>(c.full_ids.begin(), c.full_ids.begin() + (int64_t)ids.size()) == ids);
    // The prompt's pieces print back as the prompt (its leading space dropped after BOS).
    CHECK(tok.decode(ids) == c.prompt);
    CHECK(tok.decode(c.full_ids) == c.printed);
  }
}
}  // namespace

TEST_CASE("aidreams260K's tokenizer.bin encodes and decodes exactly as run.c did") {
  auto tok = Tokenizer::load_llama2c(shared_path("models/aidreams260K.tok512.bin"), 512);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->vocab_size() == 512);
  check_against(*tok, "reference/aidreams260K.greedy.tsv");
}

TEST_CASE("llama2.c's Llama 2 tokenizer.bin encodes and decodes the llama-2-tiny-random references") {
  auto tok = Tokenizer::load_llama2c(shared_path("models/llama2.tokenizer.bin"), 32000);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->data().tokens[29871] == "▁");
  CHECK(tok->data().types[0] == TokenType::unknown);
  CHECK(tok->data().types[1] == TokenType::control);
  CHECK(tok->data().types[3 + 0x41] == TokenType::byte);
  CHECK(tok->data().types[1000] == TokenType::normal);
  check_against(*tok, "reference/llama-2-tiny-random.greedy.tsv");
}

TEST_CASE("the vocabulary inside llama-2-tiny-random.gguf tokenizes like llama2.c's tokenizer.bin") {
  auto m = load_gguf_model(shared_path("models/llama-2-tiny-random.gguf"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  REQUIRE(m->tokenizer.has_value());
  auto tok = Tokenizer::from_data(*m->tokenizer, m->source);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->vocab_size() == 32000);
  check_against(*tok, "reference/llama-2-tiny-random.greedy.tsv");
}

TEST_CASE("aidreams260K's vocabulary survives a GGUF round trip and still tokenizes as run.c did") {
  TempDir dir;
  auto src = load_llama2c(shared_path("models/aidreams260K.bin"));
  REQUIRE_MESSAGE(src.has_value(), src.status().message());
  auto tok = Tokenizer::load_llama2c(shared_path("models/aidreams260K.tok512.bin"), 512);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  REQUIRE(write_model_gguf(*src, &tok->data(), DType::f32, dir.file("a.gguf"), nullptr).is_ok());
  auto m = load_gguf_model(dir.file("a.gguf"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  auto tok2 = Tokenizer::from_data(*m->tokenizer, m->source);
  REQUIRE_MESSAGE(tok2.has_value(), tok2.status().message());
  check_against(*tok2, "reference/aidreams260K.greedy.tsv");
}

TEST_CASE("byte fallback, BOS/EOS and run.c's printing rules") {
  auto tok = Tokenizer::load_llama2c(shared_path("models/llama2.tokenizer.bin"), 32000);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  CHECK(tok->encode("", true) == std::vector<int32_t>{1});
  CHECK(tok->encode("", false).empty());
  CHECK(tok->encode("", true, true) == std::vector<int32_t>{1, 2});
  // A codepoint not in the vocabulary falls back to its bytes' <0xNN> pieces.
  const std::vector<int32_t> emoji = tok->encode("\xF0\x9F\xA6\x99", false);  // U+1F999
  REQUIRE(emoji.size() >= 4);
  const std::vector<int32_t> tail(emoji.end() - 4, emoji.end());
  CHECK(tail == std::vector<int32_t>{0xF0 + 3, 0x9F + 3, 0xA6 + 3, 0x99 + 3});
  CHECK(tok->decode_piece(5, 0x41 + 3) == "A");
  CHECK(tok->decode_piece(5, 0xF0 + 3) == "\xF0");
  // After BOS a piece loses its leading space; elsewhere it keeps it.
  CHECK(tok->decode_piece(1, 29871) == "");
  CHECK(tok->decode_piece(5, 29871) == " ");
  // Lone bytes that are neither printable nor whitespace print nothing (safe_printf).
  CHECK(tok->decode({1, 0xF0 + 3, 0x41 + 3, 0x0A + 3, 0x01 + 3}) == "A\n");
  CHECK(tok->decode({1}).empty());
  CHECK(tok->decode_piece(1, -5).empty());
  CHECK(tok->decode_piece(1, 32000).empty());
}
