#pragma once
// Stop strings over streamed text (OpenAI's `stop`): text is passed on as it
// arrives except a tail that may still become a stop string; the sequence
// stops at the first occurrence of any of them in the whole text (the one
// that starts first), and neither it nor anything after it is emitted. The
// result does not depend on how the text is cut into pushes: it is what
// cutting the concatenated text before the earliest text.find(stop) gives.
// Each push costs O((new text + longest stop) * stops * longest stop) at
// worst; nothing already passed on is looked at again.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera {

// Every stop string has at least one byte: "stop[1]: must not be empty".
Status validate_stop_strings(const std::vector<std::string>& stop);

class StopMatcher {
 public:
  struct Result {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string completed: nothing more will be emitted
  };

  // `stop` must pass validate_stop_strings(); it may be empty (no stop strings).
  explicit StopMatcher(std::vector<std::string> stop);

  // The text `new_text` lets through. Once stopped, returns no text.
  Result push(std::string_view new_text);
  // At the end of the sequence: the text still held, or, when a stop string
  // completed that was waiting on a longer one starting earlier, the text
  // before it and stopped.
  Result flush();

  bool stopped() const { return stop_index_ >= 0; }
  // Which stop string ended the text; -1 while none has.
  int32_t stop_index() const { return stop_index_; }
  // The bytes held back now.
  std::string_view held() const { return held_; }

 private:
  struct Match {
    size_t position = std::string::npos;
    int32_t index = -1;
  };
  Match earliest_complete() const;
  size_t earliest_partial() const;
  Result stop_at(const Match& m);

  std::vector<std::string> stop_;
  size_t longest_ = 0;
  std::string held_;  // not yet emitted: shorter than the longest stop string, except while pushing
  int32_t stop_index_ = -1;
};

}  // namespace tessera
