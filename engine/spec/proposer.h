#pragma once
// What guesses a decoding sequence's next tokens for the target to score
// (docs/serving.md, "Speculative decoding"). The engine asks, once before
// each step, for up to k tokens per sequence (k from the sequence's
// AdaptiveK, capped by what it may still generate); the proposer writes them
// to seq->spec.proposal (and, when it sampled them, their distributions to
// seq->spec.draft_probs). After the step it is told what the target chose
// at every scored row and how many proposals were accepted.
#include <cstdint>
#include <memory>
#include <span>

#include "core/status.h"
#include "engine/serving/sequence.h"
#include "engine/spec/spec_config.h"

namespace tessera {

struct RunnerOptions;

struct ProposeItem {
  Sequence* seq = nullptr;
  int32_t k = 0;  // at most this many proposals
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual SpecMethod method() const = 0;
  virtual Status propose(std::span<const ProposeItem> items) = 0;
  // choices: the target's greedy token at each scored row (1 + proposed of
  // them; empty when the step returned logits only); the sequence's tokens
  // already hold what was accepted.
  virtual void verified(Sequence& /*s*/, std::span<const int32_t> /*choices*/, int32_t /*accepted*/) {}
  // The sequence is finished or cancelled: drop what is kept for it.
  virtual void forget(Sequence& /*s*/) {}
  // Mean milliseconds of one round of proposing for the whole batch (a draft
  // model's step); 0 when proposing costs next to nothing.
  virtual double round_ms() const { return 0; }
  // A draft model's KV positions computed to catch up, and taken from a sibling (EngineMetrics).
  virtual int64_t fed_tokens() const { return 0; }
  virtual int64_t forked_tokens() const { return 0; }
  // Only greedy sequences (temperature 0) may be proposed for (Jacobi).
  virtual bool greedy_only() const { return false; }
  // verified() reads the target's choice at every scored row, past the
  // first rejection too (Jacobi's next guesses); otherwise only up to it.
  virtual bool wants_every_choice() const { return false; }
};

// The proposer the config names; null for SpecMethod::none. `target` (the
// target's runner) gives the draft model's runner its backend, device and
// limits, and its vocabulary to check the draft's against.
class ModelRunner;
Expected<std::unique_ptr<Proposer>> make_proposer(const SpecConfig& config, const ModelRunner& target, const RunnerOptions& target_options);

}  // namespace tessera
