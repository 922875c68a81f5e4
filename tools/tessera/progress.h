#pragma once
// A progress line for long runs (tessera batch): done/total, output tok/s
// and the time left. On a terminal one line redrawn in place with a bar; to a
// file or pipe a plain line at most every 10 seconds and at the end.
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace tessera::cli {

class Progress {
 public:
  // `done` of `total` were finished before this run (a resumed batch).
  Progress(int64_t total, int64_t done, std::FILE* out);
  // One more finished, having generated `tokens`.
  void advance(int64_t tokens);
  void finish();

 private:
  void draw(bool final);
  std::FILE* out_;
  bool tty_;
  int64_t total_, done_, done_at_start_, tokens_ = 0, drawn_done_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_{};
};

}  // namespace tessera::cli
