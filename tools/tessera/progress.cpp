#include "tools/tessera/progress.h"

#include <unistd.h>

#include <string>

namespace tessera::cli {

namespace {

std::string clock_text(double s) {
  if (!(s >= 0) || s > 1e7) return "--:--";
  const long t = (long)(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%02ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace

Progress::Progress(int64_t total, int64_t done, std::FILE* out)
    : out_(out), tty_(::isatty(::fileno(out)) != 0), total_(total), done_(done), done_at_start_(done),
      start_(std::chrono::steady_clock::now()) {
  draw(false);
}

void Progress::advance(int64_t tokens) {
  ++done_;
  tokens_ += tokens;
  draw(false);
}

void Progress::finish() { draw(true); }

void Progress::draw(bool final) {
  const auto now = std::chrono::steady_clock::now();
  const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  if (!final && since_draw < (tty_ ? 0.2 : 10.0) && done_ != total_) return;
  if (final && !tty_ && drawn_done_ == done_) return;  // the last count is out already
  last_draw_ = now;
  drawn_done_ = done_;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int64_t ran = done_ - done_at_start_;
  const double tok_s = elapsed > 0 ? (double)tokens_ / elapsed : 0;
  const double eta = ran > 0 ? elapsed / (double)ran * (double)(total_ - done_) : -1;
  const double frac = total_ > 0 ? (double)done_ / (double)total_ : 1;
  char line[256];
  if (tty_) {
    constexpr int kWidth = 30;
    std::string bar((size_t)(frac * kWidth), '#');
    bar.resize(kWidth, ' ');
    std::snprintf(line, sizeof line, "\r[%s] %lld/%lld  %.1f tok/s  ETA %s ", bar.c_str(), (long long)done_, (long long)total_, tok_s,
                  clock_text(eta).c_str());
    std::fputs(line, out_);
    if (final) std::fputc('\n', out_);
  } else {
    std::snprintf(line, sizeof line, "batch: %lld/%lld done, %.1f tok/s, ETA %s\n", (long long)done_, (long long)total_, tok_s,
                  clock_text(eta).c_str());
    std::fputs(line, out_);
  }
  std::fflush(out_);
}

}  // namespace tessera::cli
