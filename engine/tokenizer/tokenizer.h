#pragma once
// SentencePiece-style BPE over a scored vocabulary, with byte fallback
// (<0xNN> pieces) and the leading-space rule of llama2.c's run.c, which is
// the reference program for the models in ../shared.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

class Tokenizer {
 public:
  // llama2.c's tokenizer.bin: int32 max_token_length, then per token f32
  // score, int32 length, bytes. `vocab_size` comes from the model header.
  static Expected<Tokenizer> load_llama2c(const std::string& path, int32_t vocab_size);
  static Expected<Tokenizer> from_data(TokenizerData data, const std::string& source);

  // BOS (when asked) then the text. Empty text gives only BOS.
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool add_eos = false) const;
  // The bytes token `id` prints after `prev` (run.c's rule: a piece after
  // BOS loses its leading space; <0xNN> is byte NN).
  std::string decode_piece(int32_t prev, int32_t id) const;
  // Every id after the first, as run.c prints them: its safe_printf drops a
  // piece that is a single byte neither printable nor whitespace (C locale
  // isprint/isspace), so a lone <0xE2> prints nothing.
  std::string decode(const std::vector<int32_t>& ids) const;

  int32_t vocab_size() const { return (int32_t)data_.tokens.size(); }
  int32_t bos_id() const { return data_.bos_id; }
  int32_t eos_id() const { return data_.eos_id; }
  const TokenizerData& data() const { return data_; }

 private:
  TokenizerData data_;
  // Pieces with U+2581 replaced by a space.
  std::vector<std::string> pieces_;
  // Ids of every piece but control tokens, sorted by piece (then id) for
  // binary search. Ids, not string_views, so that copies stay valid.
  std::vector<int32_t> sorted_;
  // The id each byte falls back to: <0xNN>, else NN + 3, else unk.
  std::vector<int32_t> byte_ids_;
  int32_t lookup(std::string_view piece) const;
};

}  // namespace tessera
