#pragma once
// A sequence's text as its tokens arrive, for streaming: push() returns the
// text each new token makes final, at a cost of O(the token's bytes).
//
// What the pushes and flush() add up to, for prompt P and generated tokens G:
//   * SentencePiece (spm) and byte-level BPE vocabularies: exactly
//     tokenizer.detokenize(P + G, render_special) with
//     tokenizer.detokenize(P, render_special) cut from its front, byte for
//     byte (detokenize's rules for the text's first token, a leading BOS
//     dropped and the space prefix removed, apply to G's first token only
//     when P is empty or just BOS).
//   * llama2.c's tokenizer.bin (TokenizerAlgorithm::llama2c): the pieces
//     run.c prints, decode_piece(previous id, id) for each token of G, the
//     previous id of G's first token being P's last (none when P is empty):
//     a piece after BOS loses its leading space, <0xNN> is byte NN, control
//     pieces print as their text (render_special does not apply). Unlike
//     tokenizer.decode() (run.c's safe_printf), lone bytes that are not
//     printable ASCII are not dropped: they are assembled into the UTF-8
//     characters they spell. So the text is decode(P + G) with decode(P) cut
//     from its front wherever G holds no such byte.
// Bytes pass through unchanged: a character split across tokens is held
// back until its last byte arrives; flush() returns whatever is still held
// (an incomplete character at the end) as it is, and invalid UTF-8 is never
// replaced, so the text is always exactly the bytes above. (Hugging Face
// writes U+FFFD for such bytes; the server may do so when it encodes JSON.)
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace tessera {

struct DetokenizeOptions {
  bool render_special = false;  // control and unknown tokens as their text (detokenize's render_special)
};

class IncrementalDetokenizer {
 public:
  // The tokenizer is shared (a Tokenizer is a handle on immutable data), so
  // the detokenizer may outlive the caller's copy and is cheap to copy.
  IncrementalDetokenizer(const Tokenizer& tokenizer, std::span<const int32_t> prompt, DetokenizeOptions options = {});

  // The text that token `id` makes final: its bytes and any held before,
  // less an incomplete UTF-8 character at the end (held for the next push).
  std::string push(int32_t id);
  // Whatever is held at the end of the sequence (at most 3 bytes).
  std::string flush();
  // The bytes held now.
  std::string_view held() const { return held_; }

 private:
  std::string piece(int32_t id);

  Tokenizer tokenizer_;
  DetokenizeOptions options_;
  bool llama2c_;
  int32_t prev_ = -1;         // llama2.c: the id before the next one
  bool at_text_start_;        // no token yet: a BOS here is dropped, as detokenize() drops ids[0]
  bool strip_leading_space_;  // the next token is the text's first: it loses a leading space
  std::string held_;          // an incomplete UTF-8 character
};

}  // namespace tessera
