#pragma once
// llama.cpp's SentencePiece BPE (llm_tokenizer_spm): UTF-8 characters as
// symbols, then merges of the adjacent pair whose concatenation is a piece of
// the highest score (a priority queue; the leftmost pair wins a tie), then each
// symbol resegmented: a piece if it is one, else split back along the merges
// that built it, else its bytes as <0xNN> tokens.
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer_data.h"
#include "engine/tokenizer/vocab.h"

namespace tessera {

class SpmBpe {
 public:
  SpmBpe(const TokenizerData& data, const Vocab& vocab);
  // `escaped`: a text fragment with spaces already turned into U+2581 (and the
  // space prefix added by the caller, as llama.cpp's tokenize does).
  void encode(std::string_view escaped, std::vector<int32_t>& out) const;

 private:
  const TokenizerData& d_;
  const Vocab& v_;
  std::vector<int32_t> byte_ids_;  // <0xNN>, else the one-byte piece, else unk
};

}  // namespace tessera
