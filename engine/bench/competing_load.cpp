#include "engine/bench/competing_load.h"

#include <chrono>
#include <csignal>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace tessera {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The child: a fixed chunk of integer work per count, nothing that locks or
// allocates (it is a fork of a multi-threaded process), until killed.
[[noreturn]] void run_child(int cpu, volatile uint64_t* counter) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) _exit(3);
  uint64_t x = 88172645463325252ull;
  for (uint64_t n = 1;; ++n) {
    for (int i = 0; i < 4096; ++i) x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: ALU only
    counter[0] = n;
    counter[1] = x;  // keeps the loop from being folded away
  }
}

}  // namespace

int last_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

Expected<CompetingLoad> CompetingLoad::start(int cpu, int calibrate_ms) {
  if (cpu < 0) return invalid_argument("competing load: no CPU to pin it to");
  void* shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return internal_error("competing load: mmap of its shared counter failed");
  auto* counter = static_cast<volatile uint64_t*>(shared);
  counter[0] = 0;
  const pid_t pid = fork();
  if (pid < 0) {
    munmap(shared, 4096);
    return internal_error("competing load: fork failed");
  }
  if (pid == 0) run_child(cpu, counter);
  CompetingLoad load;
  load.pid_ = pid;
  load.cpu_ = cpu;
  load.counter_ = counter;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the child is scheduled and pinned
  const Mark a = load.mark();
  std::this_thread::sleep_for(std::chrono::milliseconds(calibrate_ms));
  const Mark b = load.mark();
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) return internal_error("competing load: the child exited (could not pin it to CPU " + std::to_string(cpu) + ")");
  load.alone_per_s_ = b.seconds > a.seconds ? (double)(b.count - a.count) / (b.seconds - a.seconds) : 0;
  return load;
}

CompetingLoad::CompetingLoad(CompetingLoad&& o) noexcept
    : pid_(o.pid_), cpu_(o.cpu_), counter_(o.counter_), alone_per_s_(o.alone_per_s_) {
  o.pid_ = -1;
  o.counter_ = nullptr;
}

CompetingLoad::~CompetingLoad() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (counter_ != nullptr) munmap(const_cast<uint64_t*>(counter_), 4096);
}

CompetingLoad::Mark CompetingLoad::mark() const { return {counter_[0], now_s()}; }

double CompetingLoad::share_between(const Mark& a, const Mark& b) const {
  if (alone_per_s_ <= 0 || b.seconds <= a.seconds) return 0;
  return (double)(b.count - a.count) / (b.seconds - a.seconds) / alone_per_s_;
}

}  // namespace tessera
