#include "engine/serving/sequence_text.h"

namespace tessera {

SequenceText::SequenceText(const Tokenizer& tokenizer, std::span<const int32_t> prompt, const std::vector<std::string>& stop)
    : detok_(tokenizer, prompt), stop_(stop) {}

SequenceText::Delta SequenceText::push(int32_t token) {
  StopMatcher::Result r = stop_.push(detok_.push(token));
  return {std::move(r.text), r.stopped};
}

std::string SequenceText::finish() {
  StopMatcher::Result r = stop_.push(detok_.flush());
  if (r.stopped) return std::move(r.text);
  return std::move(r.text) + stop_.flush().text;
}

}  // namespace tessera
