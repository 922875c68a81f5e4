#pragma once
// N ranks as threads of one process: for each rank a HostGroup and a
// Communicator (core/hal/communicator.h) over shared memory, so the tests run
// a tensor-parallel group without mpirun (and under the sanitizers). Every
// collective is two barriers: all ranks post their buffers, each computes its
// result from all of them, then all wait until everyone has read before any
// writes in place or posts the next. Point to point goes through mailboxes.
#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <deque>
#include <span>
#include <string>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/hal/communicator.h"

namespace tessera::testing {

class ThreadWorld {
 public:
  explicit ThreadWorld(int n) : n_(n), posted_((size_t)n), counts_((size_t)n), arrive_(n), leave_(n), mail_((size_t)(n * n)) {}
  int size() const { return n_; }

  // Point to point: a send is copied into the (from, to) mailbox and returns
  // at once; a receive waits for the next message in it, in order (as MPI's).
  void put(int from, int to, const void* data, size_t bytes) {
    Mailbox& m = mail_[(size_t)(from * n_ + to)];
    {
      std::lock_guard lock(m.mutex);
      const auto* b = static_cast<const std::byte*>(data);
      m.messages.emplace_back(b, b + bytes);
    }
    m.cv.notify_all();
  }
  size_t take(int from, int to, void* data, size_t bytes) {
    const std::vector<std::byte> msg = take_message(from, to);
    // An empty message (a micro-batch with no logit rows) has no data() to copy from.
    if (!msg.empty()) std::memcpy(data, msg.data(), std::min(bytes, msg.size()));
    return msg.size();
  }
  std::vector<std::byte> take_message(int from, int to) {
    Mailbox& m = mail_[(size_t)(from * n_ + to)];
    std::unique_lock lock(m.mutex);
    m.cv.wait(lock, [&] { return !m.messages.empty(); });
    std::vector<std::byte> msg = std::move(m.messages.front());
    m.messages.pop_front();
    return msg;
  }

  // Each rank posts `p`; `fn` then runs on every rank with all of them; none returns before all have run it.
  template <typename Fn>
  void collective(int rank, const void* p, size_t count, Fn&& fn) {
    posted_[(size_t)rank] = p;
    counts_[(size_t)rank] = count;
    arrive_.arrive_and_wait();
    fn(posted_, counts_);
    leave_.arrive_and_wait();
  }

 private:
  int n_;
  std::vector<const void*> posted_;
  std::vector<size_t> counts_;
  std::barrier<> arrive_, leave_;
  struct Mailbox {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::vector<std::byte>> messages;
  };
  std::vector<Mailbox> mail_;
};

class ThreadGroup final : public HostGroup {
 public:
  ThreadGroup(std::shared_ptr<ThreadWorld> w, int rank) : w_(std::move(w)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return w_->size(); }
  Status broadcast(std::span<std::byte> bytes, int root) override {
    if (root < 0 || root >= size()) return invalid_argument("threads: broadcast from rank " + std::to_string(root));
    w_->collective(rank_, bytes.data(), bytes.size(), [&](const auto& posted, const auto&) {
      if (rank_ != root) std::memcpy(bytes.data(), posted[(size_t)root], bytes.size());
    });
    return Status::ok();
  }
  Expected<int64_t> min(int64_t value) override {
    int64_t out = value;
    w_->collective(rank_, &value, 1, [&](const auto& posted, const auto&) {
      for (const void* p : posted) out = std::min(out, *static_cast<const int64_t*>(p));
    });
    return out;
  }
  // Through the world's mailboxes: a group's world carries no other
  // point-to-point traffic (a communicator is given a world of its own).
  Status send_to_all(std::span<const std::byte> message) override {
    for (int r = 0; r < size(); ++r)
      if (r != rank_) w_->put(rank_, r, message.data(), message.size());
    return Status::ok();
  }
  Status receive_from(int from, std::vector<std::byte>& message) override {
    if (from < 0 || from >= size() || from == rank_) return invalid_argument("threads: receive from rank " + std::to_string(from));
    message = w_->take_message(from, rank_);
    return Status::ok();
  }

 private:
  std::shared_ptr<ThreadWorld> w_;
  int rank_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadWorld> w, int rank) : w_(std::move(w)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return w_->size(); }
  std::string name() const override { return "threads"; }
  Status all_reduce_sum(void* data, size_t count, DType dtype, Stream*) override {
    if (dtype != DType::f32) return unsupported("threads: all_reduce of f32 only");
    sum_.assign(count, 0.0f);
    // In rank order on every rank, so every rank's sum is the same float.
    w_->collective(rank_, data, count, [&](const auto& posted, const auto&) {
      for (const void* p : posted)
        for (size_t i = 0; i < count; ++i) sum_[i] += static_cast<const float*>(p)[i];
    });
    std::memcpy(data, sum_.data(), count * sizeof(float));
    return Status::ok();
  }
  Status all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype, Stream*) override {
    if (dtype != DType::f32) return unsupported("threads: all_gather of f32 only");
    w_->collective(rank_, send, counts[(size_t)rank_], [&](const auto& posted, const auto& posted_counts) {
      size_t at = 0;
      for (size_t r = 0; r < posted.size(); ++r) {
        std::memcpy(static_cast<float*>(recv) + at, posted[r], posted_counts[r] * sizeof(float));
        at += posted_counts[r];
      }
    });
    return Status::ok();
  }
  Status send(const void* data, size_t bytes, int peer, Stream*) override {
    w_->put(rank_, peer, data, bytes);
    return Status::ok();
  }
  Status recv(void* data, size_t bytes, int peer, Stream*) override {
    const size_t got = w_->take(peer, rank_, data, bytes);
    if (got != bytes) return internal_error("threads: rank " + std::to_string(peer) + " sent " + std::to_string(got) + " bytes, " + std::to_string(bytes) + " expected");
    return Status::ok();
  }
  // Sends never wait here, so a posted receive is taken when waited for.
  Expected<uint64_t> post_recv(void* data, size_t bytes, int peer) override {
    posted_.push_back({data, bytes, peer});
    return (uint64_t)posted_.size() - 1 + taken_;
  }
  Status wait_recv(uint64_t handle) override {
    if (handle != taken_ || posted_.empty()) return invalid_argument("threads: receives are waited for in the order posted");
    const Posted p = posted_.front();
    posted_.erase(posted_.begin());
    ++taken_;
    return recv(p.data, p.bytes, p.peer, nullptr);
  }

 private:
  std::shared_ptr<ThreadWorld> w_;
  int rank_;
  std::vector<float> sum_;
  struct Posted {
    void* data;
    size_t bytes;
    int peer;
  };
  std::vector<Posted> posted_;
  uint64_t taken_ = 0;
};

}  // namespace tessera::testing

namespace tessera::testing {

// One HostGroup per rank over one world: hand group r to the thread of rank r.
inline std::vector<std::unique_ptr<ThreadGroup>> in_process_groups(int size) {
  auto world = std::make_shared<ThreadWorld>(size);
  std::vector<std::unique_ptr<ThreadGroup>> groups;
  for (int r = 0; r < size; ++r) groups.push_back(std::make_unique<ThreadGroup>(world, r));
  return groups;
}

}  // namespace tessera::testing
