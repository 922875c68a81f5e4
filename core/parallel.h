#pragma once
// The one way kernels run in parallel. Kernels never own threads or
// synchronize: the backend hands them a ParallelFor, which splits a range
// into chunks and runs them on its workers, returning when all are done.
#include <cstdint>
#include <functional>

namespace tessera {

class ParallelFor {
 public:
  virtual ~ParallelFor() = default;
  virtual int num_threads() const = 0;
  // Calls fn(begin, end) over disjoint chunks covering [0, n); chunks are at
  // least `grain` long except the last.
  virtual void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) = 0;
};

// Runs everything on the calling thread; for reference kernels and tests.
class SerialFor final : public ParallelFor {
 public:
  int num_threads() const override { return 1; }
  void run(int64_t n, int64_t, const std::function<void(int64_t, int64_t)>& fn) override {
    if (n > 0) fn(0, n);
  }
};

}  // namespace tessera
