#pragma once
// Random text for comparing tokenizers with an independent implementation:
// words of many scripts, contractions, digit runs of several number systems,
// whitespace runs, punctuation, emoji sequences (ZWJ, skin tones, flags,
// keycaps) and code points at UTF-8 length boundaries, control and format
// characters. Always valid UTF-8, and only characters whose Unicode
// properties are the same in Unicode 15.0 and 17.0 (Node 18's ICU and ours).
// U+0085 and U+FEFF are left out on purpose: JavaScript's \s disagrees with
// Unicode's White_Space on exactly those two (docs/formats.md).
#include <cstdint>
#include <string>
#include <vector>

#include "support/random.h"

namespace tessera::testing {

inline void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += (char)cp;
  } else if (cp < 0x800) {
    s += (char)(0xC0 | (cp >> 6));
    s += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += (char)(0xE0 | (cp >> 12));
    s += (char)(0x80 | ((cp >> 6) & 0x3F));
    s += (char)(0x80 | (cp & 0x3F));
  } else {
    s += (char)(0xF0 | (cp >> 18));
    s += (char)(0x80 | ((cp >> 12) & 0x3F));
    s += (char)(0x80 | ((cp >> 6) & 0x3F));
    s += (char)(0x80 | (cp & 0x3F));
  }
}

class TextGenerator {
 public:
  explicit TextGenerator(uint64_t salt) : rng_(salt) {}

  std::string text() {
    std::string s;
    const int atoms = pick(20) == 0 ? rng_.integer(40, 120) : rng_.integer(1, 12);
    for (int i = 0; i < atoms; ++i) atom(s);
    return s;
  }

 private:
  int pick(int n) { return rng_.integer(0, n - 1); }
  template <class T>
  const T& one_of(const std::vector<T>& v) { return v[(size_t)pick((int)v.size())]; }
  void range_word(std::string& s, uint32_t lo, uint32_t hi, int max_len) {
    for (int i = rng_.integer(1, max_len); i > 0; --i) append_utf8(s, lo + (uint32_t)pick((int)(hi - lo + 1)));
  }

  void atom(std::string& s) {
    static const std::vector<std::string> contractions = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T",
                                                          "'RE", "'Ve", "'M", "'LL", "'D", "'", "''", "'x"};
    static const std::vector<std::string> spaces = {" ", " ", " ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", "\v", "\f",
                                                    "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\x89", "\xE2\x80\xA8", " \n "};
    static const std::vector<std::string> punct = {
        "!", "\"", "#", "$", "%", "&", "(", ")", "*", "+", ",", "-", ".", "/", ":", ";", "<", "=", ">", "?", "@",
        "[", "\\", "]", "^", "_", "`", "{", "|", "}", "~", "...", "--", "->", "::", "<|", "|>", "</", "€", "£",
        "©", "°", "±", "×", "÷", "–", "—", "‘", "’", "“", "”", "…", "•", "™", "¿", "¡", "§", "¶", "·", "→", "∑", "√"};
    static const std::vector<std::string> emoji = {
        "😀", "😂", "🦙", "👍", "👍🏽", "❤️", "👨‍👩‍👧", "🇫🇷", "🇯🇵", "1️⃣", "✅", "🫠", "☕", "🚀", "🙏🏾", "🏳️‍🌈", "©️", "🤖"};
    static const std::vector<std::string> numbers = {"١٢٣", "٤٥", "१२३", "１２３", "²", "³¹", "½", "¾", "Ⅻ", "ⅰⅱ", "①②", "٣", "๓๔"};
    static const std::vector<uint32_t> edges = {0x00,   0x01,   0x1F,   0x7F,    0x80,    0x9F,   0xAD,   0x7FF,
                                                0x800,  0xFFFD, 0xFFFF, 0x10000, 0x10FFFF, 0xE000, 0xF8FF, 0x200B,
                                                0x200D, 0xFE0F, 0x0301, 0x1F3FB, 0xE0001,  0x2060, 0x00B5, 0x0130};
    switch (pick(16)) {
      case 0: case 1: case 2: {  // ASCII word, some capitalized
        const bool cap = pick(3) == 0;
        for (int i = rng_.integer(1, 10); i > 0; --i) s += (char)((cap && i == 1 ? 'A' : 'a') + pick(26));
        break;
      }
      case 3: s += one_of(contractions); break;
      case 4: for (int i = rng_.integer(1, 12); i > 0; --i) s += (char)('0' + pick(10)); break;
      case 5: case 6: for (int i = rng_.integer(1, 3); i > 0; --i) s += one_of(spaces); break;
      case 7: s += one_of(punct); break;
      case 8: s += one_of(emoji); break;
      case 9: s += one_of(numbers); break;
      case 10: append_utf8(s, one_of(edges)); break;
      case 11: {  // European scripts
        static const std::vector<std::string> latin = {"é", "è", "ü", "ß", "ø", "å", "æ", "œ", "ñ", "ç", "Ä", "Ö", "ł", "ğ"};
        switch (pick(4)) {
          case 0: for (int i = rng_.integer(1, 6); i > 0; --i) s += one_of(latin); break;
          case 1: range_word(s, 0x3B1, 0x3C9, 8); break;  // Greek
          case 2: range_word(s, 0x430, 0x44F, 8); break;  // Cyrillic
          default: range_word(s, 0x410, 0x42F, 3); break;
        }
        break;
      }
      case 12: {  // right-to-left and Indic scripts, with combining marks
        switch (pick(4)) {
          case 0: range_word(s, 0x627, 0x64A, 7); break;  // Arabic
          case 1: range_word(s, 0x5D0, 0x5EA, 6); break;  // Hebrew
          case 2: range_word(s, 0x915, 0x939, 3); append_utf8(s, 0x93E + (uint32_t)pick(15)); break;  // Devanagari + matra
          default: range_word(s, 0xE01, 0xE2E, 5); append_utf8(s, 0xE31); break;  // Thai + mark
        }
        break;
      }
      case 13: {  // East Asian
        switch (pick(4)) {
          case 0: range_word(s, 0x4E00, 0x9FA5, 5); break;  // CJK
          case 1: range_word(s, 0x3041, 0x3096, 5); break;  // Hiragana
          case 2: range_word(s, 0x30A1, 0x30FA, 5); break;  // Katakana
          default: range_word(s, 0xAC00, 0xD7A3, 4); break;  // Hangul
        }
        break;
      }
      case 14: s += "e\xCC\x81"; break;  // e + combining acute
      default: s += ' '; break;
    }
  }

  Rng rng_;
};

}  // namespace tessera::testing
