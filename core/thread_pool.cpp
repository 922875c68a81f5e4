#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
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
// How long an idle worker spins before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);
// Polls between yields while spinning. Spinning alone assumes a core each:
// on a host with more runnable threads than cores (a server's HTTP threads,
// a client on the same machine), a spinning caller waits out its time slice
// for a worker the scheduler has not run, and starves the threads that
// would. A yield is a no-op when nothing else is runnable.
constexpr int kPollsPerYield = 64;
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
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
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    int polls = 0;
    while (generation_.load(std::memory_order_acquire) == seen && !stop_.load(std::memory_order_relaxed)) {
      TESSERA_CPU_RELAX();
      if (++polls % kPollsPerYield != 0) continue;
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
        sleepers_.fetch_sub(1);
        break;
      }
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    work_on_current();
    pending_.fetch_sub(1, std::memory_order_release);
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
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  shares_ = 2 * threads;
  next_.store(0, std::memory_order_relaxed);
  pending_.store((int)workers_.size(), std::memory_order_relaxed);
  generation_.fetch_add(1);  // publishes the job (seq_cst, ordered before the sleepers_ read)
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  work_on_current();
  for (int polls = 1; pending_.load(std::memory_order_acquire) != 0; ++polls) {
    TESSERA_CPU_RELAX();
    if (polls % kPollsPerYield == 0) std::this_thread::yield();
  }
  fn_ = nullptr;
}

}  // namespace tessera
