#pragma once
// The HostGroup of N ranks that are N threads of one process: what the GPU
// communicator tests bootstrap NCCL/RCCL through, in place of MPI. Every
// call is a rendezvous of all N ranks (each thread calls with its own rank's
// group), as MPI's collectives are.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <mutex>
#include <vector>

#include "core/hal/communicator.h"

namespace tessera::testing {

class InProcessChannel {
 public:
  explicit InProcessChannel(int size) : size_(size), values_((size_t)size) {}
  int size() const { return size_; }

  // Returns when all `size` ranks have arrived.
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
  }

  void broadcast(int rank, std::span<std::byte> bytes, int root) {
    if (rank == root) {
      std::lock_guard<std::mutex> lock(mutex_);
      shared_.assign(bytes.begin(), bytes.end());
    }
    barrier();
    if (rank != root) {
      std::lock_guard<std::mutex> lock(mutex_);
      std::memcpy(bytes.data(), shared_.data(), std::min(bytes.size(), shared_.size()));
    }
    barrier();  // the root's next broadcast waits until every rank has read this one
  }

  int64_t min(int rank, int64_t value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_[(size_t)rank] = value;
    }
    barrier();
    int64_t m;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      m = *std::min_element(values_.begin(), values_.end());
    }
    barrier();
    return m;
  }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::byte> shared_;
  std::vector<int64_t> values_;
};

class InProcessGroup final : public HostGroup {
 public:
  InProcessGroup(std::shared_ptr<InProcessChannel> channel, int rank) : channel_(std::move(channel)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return channel_->size(); }
  Status broadcast(std::span<std::byte> bytes, int root) override {
    if (root < 0 || root >= size()) return invalid_argument("in-process group: broadcast from rank " + std::to_string(root));
    channel_->broadcast(rank_, bytes, root);
    return Status::ok();
  }
  Expected<int64_t> min(int64_t value) override { return channel_->min(rank_, value); }

 private:
  std::shared_ptr<InProcessChannel> channel_;
  int rank_;
};

// One group per rank over one channel: hand group r to the thread of rank r.
inline std::vector<std::unique_ptr<InProcessGroup>> in_process_groups(int size) {
  auto channel = std::make_shared<InProcessChannel>(size);
  std::vector<std::unique_ptr<InProcessGroup>> groups;
  for (int r = 0; r < size; ++r) groups.push_back(std::make_unique<InProcessGroup>(channel, r));
  return groups;
}

}  // namespace tessera::testing
