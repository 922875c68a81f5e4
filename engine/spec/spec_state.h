#pragma once
// One sequence's speculation: what it proposes for its next step and what
// each proposer keeps between steps. Only the engine thread touches it.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/sampling/sampler.h"
#include "engine/spec/adaptive_k.h"

namespace tessera {

struct SpecState {
  // Tokens guessed to follow the sequence's last token, scored by the next
  // step with the last token itself (the scheduler may shorten it to fit).
  std::vector<int32_t> proposal;
  // Draft sampling: the draft's distribution at each proposal (proposal.size()
  // rows of vocab floats), which the acceptance rule needs; empty when the
  // proposals were deterministic (greedy draft, n-grams, Jacobi).
  std::vector<float> draft_probs;
  AdaptiveK k;
  // Jacobi: the last pass's outputs past what it accepted, the next guesses.
  std::vector<int32_t> guesses;
  // Draft model: tokens of this sequence whose K/V the draft's cache holds,
  // and the draft's own sampler (another stream than the target's, so its
  // draws and the target's acceptance coins are independent).
  int32_t draft_computed = 0;
  bool draft_holds_blocks = false;
  std::unique_ptr<Sampler> draft_sampler;
};

}  // namespace tessera
