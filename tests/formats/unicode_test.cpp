// The Unicode pieces under the byte-level BPE: llama.cpp's UTF-8 reading,
// the generated \p{L} / \p{N} / White_Space tables, GPT-2's byte table and
// the two pre-tokenizers' words.
#include <doctest/doctest.h>

#include "engine/tokenizer/byte_bpe.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/unicode.h"

using namespace tessera;

namespace {
std::vector<std::string> words(PreTokenizer p, const std::string& text) {
  const auto cpts = unicode::decode_utf8(text);
  std::vector<std::string> out;
  for (const auto& [b, e] : split_words(p, cpts)) out.push_back(unicode::to_utf8(cpts, b, e));
  return out;
}
using W = std::vector<std::string>;
}  // namespace

TEST_CASE("UTF-8 is read as llama.cpp reads it: each invalid byte is one U+FFFD") {
  using V = std::vector<uint32_t>;
  CHECK(unicode::decode_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99") == V{'a', 0xE9, 0x20AC, 0x1F999});
  CHECK(unicode::decode_utf8("\xE2\x82" "a") == V{0xFFFD, 0xFFFD, 'a'});  // truncated: each byte alone
  CHECK(unicode::decode_utf8("\x80\xBF") == V{0xFFFD, 0xFFFD});           // stray continuation bytes
  CHECK(unicode::decode_utf8("\xFF\xF8") == V{0xFFFD, 0xFFFD});           // no UTF-8 lead byte
  CHECK(unicode::decode_utf8("\xC0\x80") == V{0});                        // overlong: not rejected, as llama.cpp
  CHECK(unicode::decode_utf8("\xF0\x9F\xA6") == V{0xFFFD, 0xFFFD, 0xFFFD});
  CHECK(unicode::utf8_len('\xE2') == 3);
  CHECK(unicode::utf8_len('\x82') == 1);
  std::string s;
  for (uint32_t cp : {0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) unicode::append_utf8(s, cp);
  CHECK(unicode::decode_utf8(s) == V{0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF});
}

TEST_CASE("the generated classes: letters, numbers of every kind, White_Space") {
  for (uint32_t cp : {0x61u, 0x5Au, 0xE9u, 0x3B1u, 0x4E00u, 0xAC00u, 0x5D0u, 0x10000u, 0x2B5u})
    CHECK_MESSAGE(unicode::is_letter(cp), cp);
  for (uint32_t cp : {0x30u, 0x39u, 0x663u, 0xFF11u, 0xB2u, 0xBDu, 0x216Bu, 0x2460u}) CHECK_MESSAGE(unicode::is_number(cp), cp);
  for (uint32_t cp : {0x20u, 0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u, 0x202Fu, 0x3000u})
    CHECK_MESSAGE(unicode::is_whitespace(cp), cp);
  for (uint32_t cp : {0x21u, 0x5Fu, 0x301u, 0x200Bu, 0xFEFFu, 0xFFFDu, 0x1F999u, 0x10FFFFu, 0xE000u}) {
    CHECK_FALSE_MESSAGE(unicode::is_letter(cp), cp);
    CHECK_FALSE_MESSAGE(unicode::is_number(cp), cp);
    CHECK_FALSE_MESSAGE(unicode::is_whitespace(cp), cp);
  }
}

TEST_CASE("GPT-2's byte table: printable Latin-1 spells itself, the other 68 bytes take U+0100 on") {
  CHECK(byte_to_unicode('A') == "A");
  CHECK(byte_to_unicode(' ') == "\xC4\xA0");   // Ġ
  CHECK(byte_to_unicode('\n') == "\xC4\x8A");  // Ċ
  CHECK(byte_to_unicode(0) == "\xC4\x80");     // Ā
  CHECK(byte_to_unicode(0xAD) == "\xC5\x83");  // the soft hyphen is not printable: Ń
  CHECK(byte_to_unicode(0xE9) == "\xC3\xA9");
  std::string all;
  for (int b = 0; b < 256; ++b) all += byte_to_unicode((uint8_t)b);
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes += (char)b;
  CHECK(ByteBpe::piece_bytes(all) == bytes);
}

TEST_CASE("the gpt-2 and llama-bpe pre-tokenizers cut words as llama.cpp does") {
  CHECK(words(PreTokenizer::gpt2, "Hello world's 12345  x\n\ny ") ==
        W{"Hello", " world", "'s", " 12345", " ", " x", "\n", "\n", "y", " "});
  CHECK(words(PreTokenizer::llama3, "Hello world's 12345  x\n\ny ") ==
        W{"Hello", " world", "'s", " ", "123", "45", " ", " x", "\n\n", "y", " "});
  // (?i:) contractions only for llama-bpe; [^\r\n\p{L}\p{N}]?\p{L}+ takes a leading symbol.
  CHECK(words(PreTokenizer::gpt2, "I'LL") == W{"I", "'", "LL"});
  CHECK(words(PreTokenizer::llama3, "I'LL") == W{"I", "'LL"});
  CHECK(words(PreTokenizer::llama3, "(hi)!!\r\n") == W{"(hi", ")!!\r\n"});
  CHECK(words(PreTokenizer::llama3, "  \n  a") == W{"  \n", " ", " a"});
  CHECK(words(PreTokenizer::llama3, "٣٤٥٦ 日本語") == W{"٣٤٥", "٦", " 日本語"});
  CHECK(words(PreTokenizer::gpt2, "").empty());
  CHECK(pre_tokenizer_from_name("llama-bpe") == PreTokenizer::llama3);
  CHECK(pre_tokenizer_from_name("gpt-2") == PreTokenizer::gpt2);
  CHECK_FALSE(pre_tokenizer_from_name("qwen2").has_value());
}
