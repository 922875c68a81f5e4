#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSERA_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define TESSERA_CPU_RELAX() asm volatile("yield")
#else
#define TESSERA_CPU_RELAX() std::this_thread::yield()
#endif

namespace tessera {

namespace {
// How long an idle worker spins before it sleeps, unless TESSERA_SPIN_US
// says otherwise (0: sleep at once, for hosts where every cycle spent
// spinning is taken from another process).
constexpr int kSpinUs = 200;
std::chrono::microseconds spin_from_env() {
  const char* env = std::getenv("TESSERA_SPIN_US");
  if (env == nullptr || *env == '\0') return std::chrono::microseconds(kSpinUs);
  char* end = nullptr;
  const long us = std::strtol(env, &end, 10);
  if (*end != '\0' || us < 0 || us > 1000000) {
    std::fprintf(stderr, "tessera: TESSERA_SPIN_US=%s is not a count of microseconds (0 to 1000000); using %d\n", env, kSpinUs);
    return std::chrono::microseconds(kSpinUs);
  }
  return std::chrono::microseconds(us);
}
// Polls between yields while spinning. Spinning alone assumes a core each:
// on a host with more runnable threads than cores (a server's HTTP threads,
// a client on the same machine), a spinning caller waits out its time slice
// for a worker the scheduler has not run, and starves the threads that
// would. A yield is a no-op when nothing else is runnable.
constexpr int kPollsPerYield = 64;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : spin_(spin_from_env()) {
  if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// Guided self-scheduling: each claim takes a share of what is left (at
// least grain), so chunks start large (little counter traffic) and shrink
// toward the end, where equal chunks would leave one thread finishing its
// last while the others wait (decode's memory-bound matmuls lost 3-5 % to
// that with a quarter of each thread's work as the chunk).
void ThreadPool::work_on_current() {
  int64_t begin = next_.load(std::memory_order_relaxed);
  for (;;) {
    if (begin >= n_) return;
    const int64_t len = std::max(grain_, (n_ - begin) / shares_);
    if (!next_.compare_exchange_weak(begin, begin + len, std::memory_order_relaxed)) continue;
    (*fn_)(begin, std::min(n_, begin + len));
    begin = next_.load(std::memory_order_relaxed);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    // Spin, then sleep, until a new job (or stop) is published.
    const auto spin_until = std::chrono::steady_clock::now() + spin_;
    int polls = 0;
    auto fresh = [&] {
      const uint64_t s = state_.load(std::memory_order_acquire);
      return (s >> 1) != (seen >> 1) && open_state(s);
    };
    while (!fresh() && !stop_.load(std::memory_order_relaxed)) {
      TESSERA_CPU_RELAX();
      if (++polls % kPollsPerYield != 0) continue;
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return stop_.load() || fresh(); });
        sleepers_.fetch_sub(1);
        break;
      }
    }
    if (stop_.load()) return;
    seen = state_.load(std::memory_order_acquire);
    if (!open_state(seen)) continue;  // closed while this worker woke: not its job
    joined_.fetch_add(1);
    if (state_.load() == seen) work_on_current();
    joined_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int threads = num_threads();
  if (threads == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  // No worker is inside a job here (the last call waited for those that
  // joined, and a late one finds that job closed), so the fields are ours.
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  shares_ = 2 * threads;
  next_.store(0, std::memory_order_relaxed);
  const uint64_t open = (((state_.load(std::memory_order_relaxed) >> 1) + 1) << 1) | 1;
  state_.store(open);  // publishes the job (seq_cst, ordered before the sleepers_ read)
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  work_on_current();
  // Every chunk is claimed: close the job, then wait for the workers that
  // joined it (they may hold chunks); one that has not joined never will.
  state_.store(open & ~uint64_t{1});
  for (int polls = 1; joined_.load() != 0; ++polls) {  // seq_cst: see the close above
    TESSERA_CPU_RELAX();
    if (polls % kPollsPerYield == 0) std::this_thread::yield();
  }
  fn_ = nullptr;
}

}  // namespace tessera
