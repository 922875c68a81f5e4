#pragma once
// Decides what each step carries (continuous batching): first the next
// tokens of every running sequence, in admission order (one for a decode,
// a chunk for a prompt still being computed), then prompts from the head of
// the waiting queue, while the step has tokens (max_num_batched_tokens) and
// sequence slots (max_num_seqs) left. A prompt longer than the chunk limit
// is computed over several steps, mixed with the running decodes.
//
// When a running sequence needs a KV block and none is free, the most
// recently admitted running sequence is preempted by recompute: its blocks
// are released and it goes back to the head of the queue with every token
// it has (prompt and output), to be computed again when it is readmitted.
//
// Not thread-safe: the engine thread owns it, with the BlockManager and the
// prefix cache.
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/hal/block_copy.h"
#include "core/status.h"
#include "engine/kv/block_manager.h"
#include "engine/kv/prefix_cache.h"
#include "engine/serving/sequence.h"
#include "engine/serving/step_cost.h"

namespace tessera {

// fcfs: the queue in arrival order, steps as full as the limits allow.
// slo: what maximizes the requests that meet both latency targets
// (docs/serving.md, "SLO-aware scheduling"): a request that can no longer
// make its TTFT target waits behind those that still can; a new sequence is
// admitted only while the decode step stays within the TPOT target; and a
// step's tokens (so the prompt chunks) are capped at what fits that target,
// all from a step-cost line fitted to the steps run so far.
enum class SchedulePolicy : uint8_t { fcfs, slo };

// "fcfs" or "slo"; anything else is an error naming --schedule.
Expected<SchedulePolicy> parse_schedule_policy(const std::string& name);

struct SchedulerConfig {
  int32_t max_num_seqs = 64;             // sequences one step may carry
  int32_t max_num_batched_tokens = 256;  // tokens one step may carry
  int32_t max_prefill_chunk = 0;         // tokens of one prompt per step; 0: max_num_batched_tokens
  SchedulePolicy policy = SchedulePolicy::fcfs;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;  // the slo policy's targets (both > 0)
  // Independent batches kept in flight at once (pipeline parallelism's
  // "virtual engines", docs/parallelism.md): each running sequence belongs to
  // one, a step schedules one batch's sequences, and a sequence joins the
  // batch with the fewest. 1: one batch, every step takes every sequence.
  int32_t batches = 1;
};

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int32_t start = 0;     // first position fed
  int32_t n_tokens = 0;  // fed this step
  bool samples = false;  // the chunk reaches the sequence's end: its last `rows` rows' logits are sampled
  // The last `proposed` tokens fed are the sequence's proposal
  // (seq->spec.proposal), past its own tokens: speculation.
  int32_t proposed = 0;
  int32_t rows = 1;  // logit rows when it samples: 1, or 1 + proposed when the target scores a proposal
  // The token fed at position p.
  int32_t token_at(int32_t p) const;
};

struct SchedulerOutput {
  std::vector<ScheduledSeq> seqs;   // the step's sequences, in the order their tokens are laid out
  std::vector<BlockCopy> copies;    // copy-on-write before the step writes
  std::vector<Sequence*> preempted; // sent back to the queue this step
  int32_t n_tokens = 0;
  bool empty() const { return seqs.empty(); }
};

class Scheduler {
 public:
  // `prefix` may be null (prefix caching off).
  Scheduler(const SchedulerConfig& config, BlockManager& blocks, PrefixCache* prefix);

  const SchedulerConfig& config() const { return config_; }
  // To the back of the queue.
  void add(Sequence* s);
  // A sequence that joins the running set holding blocks already (a fork).
  void add_running(Sequence* s);
  // Out of the scheduler (finished, cancelled, failed): its blocks go back
  // (to the prefix cache's LRU set where cached).
  void remove(Sequence* s);

  // The next step of `batch` (0 .. config().batches - 1); empty when nothing
  // can run. Sequences with a step in flight are neither scheduled nor
  // preempted. `now` dates the queue for the slo policy.
  Status schedule(SchedulerOutput* out, std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now(),
                  int32_t batch = 0);
  // A step of `tokens` took `ms` of device time (the slo policy's cost line).
  void observe_step(int32_t tokens, double ms) { cost_.observe(tokens, ms); }
  const StepCostModel& step_cost() const { return cost_; }
  // After the step ran: the fed tokens are computed (a proposal's are not
  // yet: accept_proposed); full blocks go to the prefix cache.
  void complete(const SchedulerOutput& out);
  // The first `accepted` proposed tokens of a step were kept (and appended
  // to s.tokens): their K/V count as computed; the rejected tail's positions
  // are rolled back, freeing blocks it alone occupied. A finished sequence is
  // left alone.
  void accept_proposed(Sequence& s, int32_t accepted);

  size_t num_running() const { return running_.size(); }
  size_t num_waiting() const { return waiting_.size(); }
  int64_t preemptions() const { return preemptions_; }

 private:
  int32_t chunk_for(const Sequence& s, int32_t budget) const;
  // Reserves the blocks for s to hold `tokens`; false when there are not enough.
  bool try_reserve(Sequence& s, int32_t tokens, std::vector<BlockCopy>* copies);
  void preempt(Sequence* s, SchedulerOutput* out);
  bool admit(Sequence& s);  // takes blocks from the prefix cache; false if it cannot start
  void release_blocks(Sequence& s);
  // The batch with the fewest running sequences (the lowest on a tie).
  int32_t emptiest_batch() const;
  int32_t batch_size(int32_t batch) const;
  // slo: the step's token cap, and the queue reordered (resumed sequences,
  // then those that can still meet the TTFT target, then the rest).
  int32_t slo_token_budget() const;
  void order_waiting_for_slo(std::chrono::steady_clock::time_point now);
  bool slo_active() const { return config_.policy == SchedulePolicy::slo && cost_.ready(); }

  SchedulerConfig config_;
  BlockManager& blocks_;
  PrefixCache* prefix_;
  std::vector<Sequence*> running_;  // admission order
  std::deque<Sequence*> waiting_;
  int64_t next_admission_ = 0;
  int64_t preemptions_ = 0;
  std::vector<int32_t> hit_blocks_;
  StepCostModel cost_;
};

}  // namespace tessera
