#pragma once
// Byte-level BPE as GPT-2 and Llama 3 use it, with llama.cpp's rules
// (llm_tokenizer_bpe_session): the pre-tokenizer cuts text into words, each
// word's UTF-8 bytes are spelled with GPT-2's byte-to-character table, and
// the merges of tokenizer.ggml.merges apply lowest rank first (the leftmost
// pair on ties). With ignore_merges (llama-bpe) a word that is itself a piece
// is taken whole.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer_data.h"
#include "engine/tokenizer/vocab.h"

namespace tessera {

class ByteBpe {
 public:
  // Reads data.merges ("left right") and data.pre; `source` names the file in errors.
  static Expected<ByteBpe> build(const TokenizerData& data, const Vocab& vocab, const std::string& source);

  void encode(std::string_view text, std::vector<int32_t>& out) const;
  // A normal piece's bytes: each character mapped back through the table.
  // Characters outside it are kept as they are.
  static std::string piece_bytes(std::string_view piece);
  PreTokenizer pre() const { return pre_; }

 private:
  ByteBpe(const Vocab& v) : v_(&v) {}
  int rank(std::string_view left, std::string_view right) const;
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;

  const Vocab* v_;
  PreTokenizer pre_ = PreTokenizer::gpt2;
  bool ignore_merges_ = false;
  // "left" + '\0' + "right" → rank; pieces never hold a NUL (byte 0 is spelled Ā).
  std::unordered_map<std::string, int> ranks_;
};

// GPT-2's table: byte b → the UTF-8 of the character that spells it.
const std::string& byte_to_unicode(uint8_t b);

}  // namespace tessera
