#include "engine/tokenizer/unicode.h"

#include <algorithm>

namespace tessera::unicode {

namespace {
bool in(const CodepointRange* table, size_t n, uint32_t cp) {
  const CodepointRange* end = table + n;
  const CodepointRange* it =
      std::upper_bound(table, end, cp, [](uint32_t c, const CodepointRange& r) { return c < r.first; });
  return it != table && cp <= (it - 1)->last;
}

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }
}  // namespace

size_t utf8_len(char lead) {
  static constexpr size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[(unsigned char)lead >> 4];
}

size_t utf8_complete_prefix(std::string_view s) {
  // The last byte that is not a continuation, looking back no further than a
  // four-byte sequence reaches.
  const size_t n = s.size();
  for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
    const size_t at = n - back;
    if (continuation((unsigned char)s[at])) continue;
    return utf8_len(s[at]) > back ? at : n;
  }
  return n;
}

std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = b[i];
    if (c < 0x80) {
      out.push_back(c);
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < n && continuation(b[i + 1])) {
      out.push_back(((c & 0x1Fu) << 6) | (b[i + 1] & 0x3Fu));
      i += 2;
    } else if ((c & 0xF0) == 0xE0 && i + 2 < n && continuation(b[i + 1]) && continuation(b[i + 2])) {
      out.push_back(((c & 0x0Fu) << 12) | ((b[i + 1] & 0x3Fu) << 6) | (b[i + 2] & 0x3Fu));
      i += 3;
    } else if ((c & 0xF8) == 0xF0 && i + 3 < n && continuation(b[i + 1]) && continuation(b[i + 2]) &&
               continuation(b[i + 3])) {
      out.push_back(((c & 0x07u) << 18) | ((b[i + 1] & 0x3Fu) << 12) | ((b[i + 2] & 0x3Fu) << 6) | (b[i + 3] & 0x3Fu));
      i += 4;
    } else {
      out.push_back(kReplacement);
      i += 1;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp <= 0x7F) {
    out += (char)cp;
  } else if (cp <= 0x7FF) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp <= 0xFFFF) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    // Up to 0x1FFFFF: decode_utf8 passes 4-byte forms through unchecked.
    out += (char)(0xF0 | ((cp >> 18) & 0x07));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

std::string to_utf8(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string s;
  for (size_t i = begin; i < end; ++i) append_utf8(s, cps[i]);
  return s;
}

bool is_letter(uint32_t cp) { return in(unicode_tables::kLetters, unicode_tables::kLetters_count, cp); }
bool is_number(uint32_t cp) { return in(unicode_tables::kNumbers, unicode_tables::kNumbers_count, cp); }
bool is_whitespace(uint32_t cp) { return in(unicode_tables::kWhitespace, unicode_tables::kWhitespace_count, cp); }

}  // namespace tessera::unicode
