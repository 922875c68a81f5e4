#pragma once
// Another process's work on one core, for measuring decode on a shared
// machine (issue: "no spinning that takes a core from another process"):
// a child process pinned to one CPU counts loop iterations into shared
// memory. Its rate alone (the calibration) against its rate while the
// bench decodes says how much of that core the runtime's threads took,
// besides how much the load slowed the decode.
#include <cstdint>
#include <sys/types.h>

#include "core/status.h"

namespace tessera {

class CompetingLoad {
 public:
  // Forks the child, pinned to `cpu` (one the calling process may run on),
  // and measures its rate alone for `calibrate_ms` while this thread sleeps.
  static Expected<CompetingLoad> start(int cpu, int calibrate_ms = 400);
  CompetingLoad(CompetingLoad&& o) noexcept;
  CompetingLoad& operator=(CompetingLoad&&) = delete;
  CompetingLoad(const CompetingLoad&) = delete;
  ~CompetingLoad();  // kills and reaps the child

  int cpu() const { return cpu_; }
  double alone_per_s() const { return alone_per_s_; }
  // Iterations the child has counted so far, and when.
  struct Mark {
    uint64_t count;
    double seconds;
  };
  Mark mark() const;
  // The child's rate between two marks as a fraction of its rate alone.
  double share_between(const Mark& a, const Mark& b) const;

 private:
  CompetingLoad() = default;
  pid_t pid_ = -1;
  int cpu_ = -1;
  volatile uint64_t* counter_ = nullptr;  // shared with the child
  double alone_per_s_ = 0;
};

// The last CPU of this process's affinity mask (where a competing load
// takes one core of the ones the runtime's pool would use), or -1.
int last_allowed_cpu();

}  // namespace tessera
