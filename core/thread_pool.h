#pragma once
// A fixed pool of worker threads implementing ParallelFor. Workers are
// created once. Between calls they spin for a short while (a decode step
// issues hundreds of small dispatches back to back, and a futex wake-up per
// dispatch costs more than many of them take), then sleep on a condition
// variable. A call hands out chunks through an atomic counter; the caller's
// thread works too.
#include <atomic>
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

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int> pending_{0};  // workers still inside the current job
  std::atomic<bool> stop_{false};
  // the current job, published by the release on generation_
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, grain_ = 1, shares_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace tessera
