#pragma once
// A fixed pool of worker threads implementing ParallelFor. Workers are
// created once and wait between calls; a call hands out chunks through an
// atomic counter and the caller's thread works too.
#include <atomic>
#include <condition_variable>
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
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  int busy_ = 0;
  // the current job
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace tessera
