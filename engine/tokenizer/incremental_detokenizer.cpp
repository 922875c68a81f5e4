#include "engine/tokenizer/incremental_detokenizer.h"

#include "engine/tokenizer/unicode.h"

namespace tessera {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                               DetokenizeOptions options)
    : tokenizer_(tokenizer), options_(options), llama2c_(tokenizer.algorithm() == TokenizerAlgorithm::llama2c) {
  if (!prompt.empty()) prev_ = prompt.back();
  // detokenize(): a leading BOS is dropped, then the first token after it
  // loses its space prefix (SentencePiece vocabularies that add one).
  const size_t first_text_token = !prompt.empty() && prompt[0] == tokenizer.bos_id() ? 1 : 0;
  at_text_start_ = prompt.empty();
  strip_leading_space_ = tokenizer.algorithm() != TokenizerAlgorithm::byte_bpe && tokenizer.data().add_space_prefix &&
                         first_text_token == prompt.size();
}

std::string IncrementalDetokenizer::piece(int32_t id) {
  if (llama2c_) {
    std::string p = tokenizer_.decode_piece(prev_, id);
    prev_ = id;
    return p;
  }
  const bool text_start = at_text_start_;
  at_text_start_ = false;
  if (text_start && id == tokenizer_.bos_id()) return {};
  std::string p = tokenizer_.token_bytes(id, options_.render_special);
  if (strip_leading_space_ && !p.empty() && p[0] == ' ') p.erase(0, 1);
  strip_leading_space_ = false;
  return p;
}

std::string IncrementalDetokenizer::push(int32_t id) {
  std::string text = std::move(held_);
  text += piece(id);
  const size_t complete = unicode::utf8_complete_prefix(text);
  held_.assign(text, complete);
  text.resize(complete);
  return text;
}

std::string IncrementalDetokenizer::flush() {
  std::string text = std::move(held_);
  held_.clear();
  return text;
}

}  // namespace tessera
