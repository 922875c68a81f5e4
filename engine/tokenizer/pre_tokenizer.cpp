// The splitting loops mirror llama.cpp's src/unicode.cpp line for line
// (including where they read flags past a word's end as "nothing"), because
// llama.cpp's words, not a regex engine's, are the reference.
#include "engine/tokenizer/pre_tokenizer.h"

#include "engine/tokenizer/unicode.h"

namespace tessera {

namespace {

constexpr uint32_t kOutOfRange = 0xFFFFFFFF;

struct Flags {
  bool defined = false;  // a code point is there (llama.cpp: flags.as_uint() != 0)
  bool letter = false, number = false, whitespace = false;
};

class Cursor {
 public:
  explicit Cursor(const std::vector<uint32_t>& cpts) : c_(cpts) {}
  uint32_t cpt(size_t pos) const { return pos < c_.size() ? c_[pos] : kOutOfRange; }
  Flags flags(size_t pos) const {
    if (pos >= c_.size()) return {};
    const uint32_t cp = c_[pos];
    return {true, unicode::is_letter(cp), unicode::is_number(cp), unicode::is_whitespace(cp)};
  }
  size_t size() const { return c_.size(); }
  // Ends a word at `end`; returns its length.
  size_t add(size_t end) {
    const size_t len = end - prev_;
    if (len > 0) words_.emplace_back(prev_, end);
    prev_ = end;
    return len;
  }
  std::vector<std::pair<size_t, size_t>> take() { return std::move(words_); }

 private:
  const std::vector<uint32_t>& c_;
  size_t prev_ = 0;
  std::vector<std::pair<size_t, size_t>> words_;
};

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's 't 'm 'd (2) or 're 've 'll (3) at pos; 0 when none. `fold` for (?i:).
size_t contraction(const Cursor& s, size_t pos, bool fold) {
  const size_t end = s.size();
  if (s.cpt(pos) != '\'' || pos + 1 >= end) return 0;
  auto at = [&](size_t p) { return fold ? ascii_lower(s.cpt(p)) : s.cpt(p); };
  const uint32_t a = at(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 < end) {
    const uint32_t b = at(pos + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

std::vector<std::pair<size_t, size_t>> split_gpt2(const std::vector<uint32_t>& cpts) {
  Cursor s(cpts);
  const size_t end = cpts.size();
  for (size_t pos = 0; pos < end;) {
    const uint32_t cpt = s.cpt(pos);
    const Flags flags = s.flags(pos);
    if (const size_t n = contraction(s, pos, false)) {
      pos += s.add(pos + n);
      continue;
    }
    Flags f2 = cpt == ' ' ? s.flags(pos + 1) : flags;
    if (f2.letter) {  // <space>?\p{L}+
      pos += cpt == ' ';
      while (f2.letter) f2 = s.flags(++pos);
      s.add(pos);
      continue;
    }
    if (f2.number) {  // <space>?\p{N}+
      pos += cpt == ' ';
      while (f2.number) f2 = s.flags(++pos);
      s.add(pos);
      continue;
    }
    if (!(f2.whitespace || f2.letter || f2.number) && f2.defined) {  // <space>?[^\s\p{L}\p{N}]+
      pos += cpt == ' ';
      while (!(f2.whitespace || f2.letter || f2.number) && f2.defined) f2 = s.flags(++pos);
      s.add(pos);
      continue;
    }
    size_t spaces = 0;
    while (s.flags(pos + spaces).whitespace) ++spaces;
    if (spaces > 1 && s.cpt(pos + spaces) != kOutOfRange) {  // \s+(?!\S)
      pos += spaces - 1;
      s.add(pos);
      continue;
    }
    if (spaces > 0) {  // \s+
      pos += spaces;
      s.add(pos);
      continue;
    }
    s.add(++pos);  // no match: one code point
  }
  return s.take();
}

std::vector<std::pair<size_t, size_t>> split_llama3(const std::vector<uint32_t>& cpts) {
  Cursor s(cpts);
  const size_t end = cpts.size();
  for (size_t pos = 0; pos < end;) {
    const uint32_t cpt = s.cpt(pos);
    const Flags flags = s.flags(pos);
    if (const size_t n = contraction(s, pos, true)) {  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
      pos += s.add(pos + n);
      continue;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!(cpt == '\r' || cpt == '\n' || flags.number)) {
      if (flags.letter || s.flags(pos + 1).letter) {
        ++pos;
        while (s.flags(pos).letter) ++pos;
        s.add(pos);
        continue;
      }
    }
    if (flags.number) {  // \p{N}{1,3}
      size_t ini = pos;
      while (s.flags(pos).number) {
        if (++pos - ini >= 3) {
          s.add(pos);
          ini = pos;
        }
      }
      s.add(pos);
      continue;
    }
    // <space>?[^\s\p{L}\p{N}]+[\r\n]*  (llama.cpp tests the first code point's
    // flags for "defined" here, which is the same for any in-range position)
    Flags f2 = cpt == ' ' ? s.flags(pos + 1) : flags;
    if (!(f2.whitespace || f2.letter || f2.number) && flags.defined) {
      pos += cpt == ' ';
      while (!(f2.whitespace || f2.letter || f2.number) && f2.defined) f2 = s.flags(++pos);
      uint32_t c2 = s.cpt(pos);
      while (c2 == '\r' || c2 == '\n') c2 = s.cpt(++pos);
      s.add(pos);
      continue;
    }
    size_t spaces = 0, last_newline_end = 0;
    while (s.flags(pos + spaces).whitespace) {
      const uint32_t c2 = s.cpt(pos + spaces);
      if (c2 == '\r' || c2 == '\n') last_newline_end = pos + spaces + 1;
      ++spaces;
    }
    if (last_newline_end > 0) {  // \s*[\r\n]+
      pos = last_newline_end;
      s.add(pos);
      continue;
    }
    if (spaces > 1 && s.cpt(pos + spaces) != kOutOfRange) {  // \s+(?!\S)
      pos += spaces - 1;
      s.add(pos);
      continue;
    }
    if (spaces > 0) {  // \s+
      pos += spaces;
      s.add(pos);
      continue;
    }
    s.add(++pos);
  }
  return s.take();
}

}  // namespace

std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view n) {
  // llama.cpp's LLAMA_VOCAB_PRE_TYPE_GPT2 and _LLAMA3 names.
  if (n == "gpt-2" || n == "gpt2" || n == "phi-2" || n == "roberta-bpe" || n == "jina-es" || n == "jina-de" ||
      n == "gigachat" || n == "jina-v1-en" || n == "jina-v2-es" || n == "jina-v2-de" || n == "jina-v2-code")
    return PreTokenizer::gpt2;
  if (n == "llama-bpe" || n == "llama3" || n == "llama-v3" || n == "falcon3") return PreTokenizer::llama3;
  return std::nullopt;
}

std::string_view supported_pre_tokenizers() {
  return "gpt-2 (also gpt2, phi-2, roberta-bpe, jina-*), llama-bpe (also llama3, llama-v3, falcon3)";
}

std::string_view pre_tokenizer_name(PreTokenizer p) { return p == PreTokenizer::gpt2 ? "gpt-2" : "llama-bpe"; }

std::string_view pre_tokenizer_regex(PreTokenizer p) {
  return p == PreTokenizer::gpt2
             ? R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"
             : R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

std::vector<std::pair<size_t, size_t>> split_words(PreTokenizer p, const std::vector<uint32_t>& cpts) {
  return p == PreTokenizer::gpt2 ? split_gpt2(cpts) : split_llama3(cpts);
}

}  // namespace tessera
