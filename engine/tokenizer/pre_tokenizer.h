#pragma once
// Byte-level BPE pre-tokenizers: the regex a tokenizer.json names, cutting
// text into words before merges run. Hand-written, code point by code point,
// as llama.cpp's unicode_regex_split_custom_gpt2 / _llama3 are, so that the
// words are exactly llama.cpp's (and Hugging Face's for valid UTF-8).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

enum class PreTokenizer {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  gpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  llama3,
};

// tokenizer.ggml.pre names, as llama.cpp maps them; nullopt when not one of ours.
std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name);
// The names we accept, for messages: "gpt-2, llama-bpe, ...".
std::string_view supported_pre_tokenizers();
// The canonical tokenizer.ggml.pre we write for one.
std::string_view pre_tokenizer_name(PreTokenizer p);
// The Hugging Face Split regex of one (as tokenizer.json spells it).
std::string_view pre_tokenizer_regex(PreTokenizer p);

// Words of `cpts` as [begin, end) code point spans, covering all of it.
std::vector<std::pair<size_t, size_t>> split_words(PreTokenizer p, const std::vector<uint32_t>& cpts);

}  // namespace tessera
