#pragma once
// A model split over two ranks that are threads of this process (tests/support/thread_group.h):
// rank 0 opens it as a Model, rank 1 follows (follow_leader) until the group goes.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <thread>

#include "engine/api/model_impl.h"
#include "support/thread_group.h"

namespace tessera::testing {

// Rank 1 on a thread, following rank 0 until the group goes.
class TwoRanks {
 public:
  TwoRanks() : world_(std::make_shared<ThreadWorld>(2)), data_(std::make_shared<ThreadWorld>(2)) {
    follower_ = std::thread([this] {
      follower_status_ = follow_leader({std::make_shared<ThreadGroup>(world_, 1), std::make_shared<ThreadCommunicator>(data_, 1)});
    });
  }
  ~TwoRanks() { leave(); }
  // Tells rank 1 to stop and waits for it (after this, follower_status() is final).
  void leave() {
    if (!follower_.joinable()) return;
    (void)send_control(*leader_group_, ControlKind::leave);
    follower_.join();
  }
  // Makes `ro` rank 0's options of a split over the two ranks (tensor or pipeline).
  void join(RunnerOptions& ro, bool pipeline = false) {
    ro.parallel.tensor = pipeline ? 1 : 2;
    ro.parallel.pipeline = pipeline ? 2 : 1;
    ro.parallel.group = leader_group_;
    ro.parallel.host_comm = std::make_shared<ThreadCommunicator>(data_, 0);
  }
  // A model split over the two ranks, opened on rank 0.
  std::unique_ptr<Model> open(const std::string& path, int32_t ctx = 64, bool pipeline = false) {
    ModelOptions o;
    o.path = path;
    o.max_context = ctx;
    RunnerOptions ro = runner_options(o);
    join(ro, pipeline);
    auto m = open_model(o, ro);
    REQUIRE_MESSAGE(m.has_value(), m.status().message());
    return std::move(*m);
  }
  const Status& follower_status() const { return follower_status_; }

 private:
  std::shared_ptr<ThreadWorld> world_, data_;
  std::shared_ptr<HostGroup> leader_group_ = std::make_shared<ThreadGroup>(world_, 0);
  std::thread follower_;
  Status follower_status_;
};


}  // namespace tessera::testing
