#pragma once
// llama2.c run.c's tokenizer, faithfully: the references in ../shared were
// made with it, so every quirk is deliberate. Used for llama2.c tokenizer.bin
// files; GGUF and tokenizer.json vocabularies use llama.cpp's SPM instead
// (spm_bpe.h), which agrees with it on ordinary text (see docs/formats.md).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

class RuncBpe {
 public:
  explicit RuncBpe(const TokenizerData& data);

  // The dummy-prefix space, the text's code points (else their bytes), then
  // greedy highest-score merges; BOS first when asked (it takes part in the
  // merges, as in run.c).
  void encode(std::string_view text, bool add_bos, std::vector<int32_t>& out) const;
  // A piece with U+2581 as a space.
  const std::string& piece(int32_t id) const { return pieces_[(size_t)id]; }

 private:
  int32_t lookup(std::string_view piece) const;

  const TokenizerData& d_;
  std::vector<std::string> pieces_;  // U+2581 replaced by a space, as run.c's tokenizer.bin spells them
  // Ids of every piece but control tokens, sorted by piece (then id) for
  // binary search: run.c's tokenizer.bin spells <s> as "\n<s>\n", which no
  // merge reaches, so control pieces must not be found.
  std::vector<int32_t> sorted_;
  std::vector<int32_t> byte_ids_;  // the id each byte falls back to: <0xNN>, else NN + 3, else unk
};

}  // namespace tessera
