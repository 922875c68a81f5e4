#pragma once
// One Tokenizer class over three algorithms, chosen by where the vocabulary
// came from (docs/formats.md says which passes what):
//   * llama2.c tokenizer.bin: run.c's BPE, quirk for quirk (runc_bpe.h) — the
//     references in ../shared were made with it;
//   * tokenizer.ggml.model = llama (GGUF, or a SentencePiece-style
//     tokenizer.json): llama.cpp's SentencePiece BPE (spm_bpe.h);
//   * tokenizer.ggml.model = gpt2 (GGUF, or a byte-level tokenizer.json):
//     llama.cpp's byte-level BPE with the gpt-2 or llama-bpe pre-tokenizer.
// Around the algorithm, as llama.cpp's llama_tokenize: control, unknown and
// user-defined pieces are split out of the text first (control and unknown
// only with parse_special), then BOS/EOS are added.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

enum class TokenizerAlgorithm { llama2c, spm, byte_bpe };

struct EncodeOptions {
  bool add_bos = true;
  bool add_eos = false;
  // Text spelling a control or unknown piece (</s>, <|begin_of_text|>) becomes
  // that token; without it such text is tokenized as plain text (llama.cpp's
  // parse_special). Not used by the llama2.c algorithm, which has no such rule.
  bool parse_special = false;
};

class Tokenizer {
 public:
  // llama2.c's tokenizer.bin: int32 max_token_length, then per token f32
  // score, int32 length, bytes. `vocab_size` comes from the model header.
  static Expected<Tokenizer> load_llama2c(const std::string& path, int32_t vocab_size);
  // A Hugging Face tokenizer.json (see tokenizer_json.h for what is read).
  static Expected<Tokenizer> load_hf_json(const std::string& path);
  // Either of the two, told apart by content (tokenizer.json starts with '{').
  static Expected<Tokenizer> load_file(const std::string& path, int32_t vocab_size);
  // A vocabulary read from a GGUF file or a tokenizer.json: data.model picks
  // llama.cpp's SPM ("llama") or byte-level BPE ("gpt2").
  static Expected<Tokenizer> from_data(TokenizerData data, const std::string& source);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const;
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool add_eos = false) const {
    return encode(text, EncodeOptions{add_bos, add_eos, false});
  }
  // The vocabulary's own add_bos / add_eos (llama.cpp's add_special = true).
  EncodeOptions default_options() const { return {data().add_bos, data().add_eos, false}; }

  // What token `id` prints after `prev`, as the CLI streams text: for
  // SentencePiece vocabularies run.c's rule (a piece after BOS loses its
  // leading space; <0xNN> is byte NN); for byte-level BPE the token's bytes.
  std::string decode_piece(int32_t prev, int32_t id) const;
  // Every id after the first, as run.c prints them: its safe_printf drops a
  // piece that is a single byte neither printable nor whitespace (C locale
  // isprint/isspace), so a lone <0xE2> prints nothing. (Byte-level BPE: the
  // pieces' bytes, nothing dropped.)
  std::string decode(const std::vector<int32_t>& ids) const;
  // The bytes of one token as llama.cpp's token_to_piece gives them: ▁ as a
  // space, <0xNN> as its byte, byte-level characters as their bytes; control
  // and unknown tokens as their text when `special`, else nothing.
  std::string token_bytes(int32_t id, bool special) const;
  // The text of `ids`: a leading BOS dropped, then every token's bytes, the
  // space prefix removed from the first. Inverts encode() for any text
  // SentencePiece can spell and any valid UTF-8 for byte-level BPE.
  std::string detokenize(const std::vector<int32_t>& ids, bool render_special = false) const;

  int32_t vocab_size() const;
  int32_t bos_id() const { return data().bos_id; }
  int32_t eos_id() const { return data().eos_id; }
  const TokenizerData& data() const;
  TokenizerAlgorithm algorithm() const;
  // "SentencePiece BPE (llama.cpp rules)", "byte-level BPE (llama-bpe)", ...
  std::string description() const;

 private:
  struct Impl;
  static Expected<Tokenizer> build(TokenizerData data, const std::string& source, TokenizerAlgorithm algorithm);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace tessera
