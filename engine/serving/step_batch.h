#pragma once
// The arrays of one step (StepArgs) for the sequences the scheduler chose:
// each sequence's tokens laid out one after another, their positions and KV
// slots, query_start / seq_lens / block tables per sequence, and one logit
// row per sequence that samples (the last row of its chunk), or the last
// 1 + k rows of one that scores k proposed tokens. Kept alive,
// and reused, by its owner while the step is in flight.
#include <cstdint>
#include <vector>

#include "core/hal/plan.h"
#include "engine/kv/block_manager.h"
#include "engine/serving/scheduler.h"

namespace tessera {

class StepBatch {
 public:
  // max_blocks_per_seq: the runner's block-table row stride.
  void build(const SchedulerOutput& out, const BlockManager& blocks, int32_t max_blocks_per_seq);
  const StepArgs& args() const { return args_; }

 private:
  std::vector<int32_t> tokens_, positions_, slots_, query_start_, seq_lens_, block_tables_, logit_rows_;
  StepArgs args_;
};

}  // namespace tessera
