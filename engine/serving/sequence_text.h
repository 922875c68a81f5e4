#pragma once
// The text side of one sequence: its tokens detokenized as they come
// (incomplete characters held back) and matched against the request's stop
// strings (text that may begin one held back until it is known not to).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/serving/stop_matcher.h"
#include "engine/tokenizer/incremental_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera {

class SequenceText {
 public:
  SequenceText(const Tokenizer& tokenizer, std::span<const int32_t> prompt, const std::vector<std::string>& stop);
  struct Delta {
    std::string text;      // final now
    bool stopped = false;  // a stop string completed: text ends before it
  };
  Delta push(int32_t token);
  // What is still held when the sequence ends without a stop string.
  std::string finish();

 private:
  IncrementalDetokenizer detok_;
  StopMatcher stop_;
};

}  // namespace tessera
