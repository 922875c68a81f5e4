#pragma once
// A fixed pool of worker threads implementing ParallelFor. Workers are
// created once. Between calls they spin for a short while (a decode step
// issues hundreds of small dispatches back to back, and a futex wake-up per
// dispatch costs more than many of them take), then sleep on a condition
// variable. A call hands out chunks through an atomic counter; the caller's
// thread works too, and waits only for the workers that joined the call:
// on a shared machine a worker the scheduler has not run (another process
// holds its core) must not hold up a call whose chunks are all taken, or
// every small dispatch waits out a time slice (docs/performance.md,
// "Threading on a shared machine").
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/parallel.h"

namespace tessera {

class ThreadPool final : public ParallelFor {
 public:
  // n_threads <= 0 means one per hardware thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const override { return (int)workers_.size() + 1; }
  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) override;

 private:
  void worker_loop();
  void work_on_current();

  std::chrono::microseconds spin_;  // TESSERA_SPIN_US, or 200
  std::vector<std::thread> workers_;
  // Whether a worker that saw `state` may still join: the job it names is the
  // current one and still open.
  static bool open_state(uint64_t state) { return (state & 1) != 0; }

  std::mutex mu_;
  std::condition_variable wake_;
  // generation << 1 | open: a call publishes its job as (g + 1, open), and
  // closes it once every chunk is claimed; a worker joins by counting
  // itself in joined_ and then finding the state it saw still current and
  // open (both seq_cst, so either the caller sees the worker counted or the
  // worker sees the job closed).
  std::atomic<uint64_t> state_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int> joined_{0};  // workers inside the current job
  std::atomic<bool> stop_{false};
  // the current job, published by the store of its open state
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, grain_ = 1, shares_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace tessera
