#include "engine/serving/stop_matcher.h"

#include <algorithm>

namespace tessera {

Status validate_stop_strings(const std::vector<std::string>& stop) {
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return invalid_argument("stop[" + std::to_string(i) + "]: must not be empty");
  }
  return Status::ok();
}

StopMatcher::StopMatcher(std::vector<std::string> stop) : stop_(std::move(stop)) {
  for (const std::string& s : stop_) longest_ = std::max(longest_, s.size());
}

// The first position in held_ where a stop string starts and completes.
StopMatcher::Match StopMatcher::earliest_complete() const {
  Match best;
  for (size_t i = 0; i < stop_.size(); ++i) {
    const size_t at = held_.find(stop_[i]);
    if (at < best.position) best = {at, (int32_t)i};
  }
  return best;
}

// The first position from which the rest of held_ is a proper prefix of some
// stop string (it may yet complete), or held_.size() when there is none.
// Only the last longest_ - 1 bytes can start one.
size_t StopMatcher::earliest_partial() const {
  const size_t n = held_.size();
  const size_t from = n >= longest_ ? n - longest_ + 1 : 0;
  for (size_t at = from; at < n; ++at) {
    const std::string_view tail = std::string_view(held_).substr(at);
    for (const std::string& s : stop_) {
      if (s.size() > tail.size() && std::string_view(s).starts_with(tail)) return at;
    }
  }
  return n;
}

StopMatcher::Result StopMatcher::stop_at(const Match& m) {
  Result r{held_.substr(0, m.position), true};
  held_.clear();
  stop_index_ = m.index;
  return r;
}

StopMatcher::Result StopMatcher::push(std::string_view new_text) {
  if (stopped()) return {{}, true};
  if (stop_.empty()) return {std::string(new_text), false};
  held_.append(new_text);
  const Match complete = earliest_complete();
  const size_t partial = earliest_partial();
  // A complete stop string ends the text unless one that starts before it
  // might still complete.
  if (complete.index >= 0 && partial >= complete.position) return stop_at(complete);
  Result r{held_.substr(0, partial), false};
  held_.erase(0, partial);
  return r;
}

StopMatcher::Result StopMatcher::flush() {
  if (stopped()) return {{}, true};
  const Match complete = earliest_complete();
  if (complete.index >= 0) return stop_at(complete);
  Result r{std::move(held_), false};
  held_.clear();
  return r;
}

}  // namespace tessera
