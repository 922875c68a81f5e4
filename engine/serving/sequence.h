#pragma once
// One sequence the engine generates: the unit the scheduler moves between
// waiting and running. A request with n > 1 has n of them (the first
// computes the prompt; the others are forked from it when it is done).
// Only the engine thread touches a Sequence.
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"
#include "engine/serving/sequence_text.h"
#include "engine/spec/spec_state.h"

namespace tessera {

class RequestState;

enum class SeqStatus : uint8_t { waiting, running, finished };

struct Sequence {
  SeqId id = 0;
  RequestState* request = nullptr;  // owns this sequence
  int32_t index = 0;                // within the request's n
  std::vector<int32_t> tokens;      // the prompt, then every generated token
  int32_t prompt_len = 0;
  // Tokens whose K/V are in the cache (from a step, or from the prefix
  // cache). The tokens after it are fed by the next steps; a step that
  // reaches tokens.size() yields logits to sample from.
  int32_t num_computed = 0;
  SeqStatus status = SeqStatus::waiting;
  bool holds_blocks = false;    // added to the BlockManager
  int64_t admitted = 0;         // admission order: the most recent is preempted first
  int32_t forks_pending = 0;    // n - 1 on the first sequence until its prompt is done
  std::chrono::steady_clock::time_point arrival{};  // its request's submission (the slo policy's TTFT clock)
  Sampler sampler;
  std::unique_ptr<SequenceText> text;  // when the request detokenizes
  SpecState spec;                      // speculation (the engine's proposer, when it has one)
  // Pipeline parallelism's independent batches (Scheduler, virtual_engines):
  // the batch this sequence steps in, and whether a step of it is in flight
  // (submitted, not collected: not scheduled again, not preempted, not
  // finished until then).
  int32_t batch = 0;
  bool in_flight = false;

  Sequence(SeqId seq_id, const SamplerParams& params) : id(seq_id), sampler(params) {}
  int32_t generated() const { return (int32_t)tokens.size() - prompt_len; }
  // Tokens a step must still feed before this sequence can sample again.
  int32_t pending() const { return (int32_t)tokens.size() - num_computed; }
  // Sequence slots this one stands for while waiting (its forks join it when admitted).
  int32_t slots() const { return 1 + forks_pending; }
};

}  // namespace tessera
