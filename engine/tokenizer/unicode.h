#pragma once
// The little Unicode the tokenizers need, with llama.cpp's exact rules: how
// UTF-8 is cut into code points (an invalid byte becomes U+FFFD on its own),
// and the \p{L}, \p{N} and White_Space classes the pre-tokenizers split on.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

struct CodepointRange {
  uint32_t first, last;  // inclusive
};

// Generated tables (unicode_tables.cpp), sorted and disjoint.
namespace unicode_tables {
extern const CodepointRange kLetters[];
extern const size_t kLetters_count;
extern const CodepointRange kNumbers[];
extern const size_t kNumbers_count;
extern const CodepointRange kWhitespace[];
extern const size_t kWhitespace_count;
}  // namespace unicode_tables

namespace unicode {

inline constexpr uint32_t kReplacement = 0xFFFD;

// Bytes of the UTF-8 sequence a lead byte announces, by its high nibble
// (llama.cpp's unicode_len_utf8: a stray continuation byte counts as 1).
size_t utf8_len(char lead);

// Code points of `s` as llama.cpp's unicode_cpts_from_utf8 reads them: a
// sequence with a bad or missing continuation byte yields U+FFFD for its
// first byte and decoding resumes at the next byte. Overlong forms and
// surrogates are not rejected (llama.cpp does not either).
std::vector<uint32_t> decode_utf8(std::string_view s);

// The length of `s` without a trailing incomplete sequence: a lead byte
// followed by fewer continuation bytes than it announces (at most 3 bytes are
// cut). Invalid bytes elsewhere count as complete, so text streamed in pieces
// can hold back a character split across pieces and pass everything else on.
size_t utf8_complete_prefix(std::string_view s);

void append_utf8(std::string& out, uint32_t cp);
std::string to_utf8(const std::vector<uint32_t>& cps, size_t begin, size_t end);

bool is_letter(uint32_t cp);      // \p{L}
bool is_number(uint32_t cp);      // \p{N}
bool is_whitespace(uint32_t cp);  // White_Space (regex \s as llama.cpp and Hugging Face tokenizers read it)

}  // namespace unicode
}  // namespace tessera
