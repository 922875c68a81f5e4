#pragma once
// The target's verdict on one row of a speculating sequence: the rule of
// Leviathan et al. (2023) and Chen et al. (2023), which leaves the target's
// distribution unchanged whatever the proposals. With p the target's
// distribution at the row (Sampler::distribution: penalties, temperature,
// top-k/p, min-p) and q the draft's, a proposal x is accepted with
// probability min(1, p(x) / q(x)); when it is not, the row's token is drawn
// from max(0, p - q), renormalized. A deterministic proposal (n-gram,
// Jacobi, a greedy draft) is q = one-hot at x: accepted with probability
// p(x), else drawn from p without x. At temperature 0 p is one-hot at the
// target's own argmax, so a proposal is accepted exactly when it is that
// token. The bonus row (after every proposal was accepted) is sampled as a
// plain step's row.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling/sampler.h"

namespace tessera {

struct RowVerdict {
  int32_t token = -1;     // the row's output token: the proposal when accepted
  bool accepted = false;
};

struct VerifyRow {
  std::span<const float> logits;  // the target's raw logits (may be empty when device_token is given and the sampler is greedy without adjustments)
  int32_t device_token = -1;      // the target's argmax from the device, or -1
  int32_t proposal = -1;          // -1: the bonus row
  std::span<const float> q;       // the draft's distribution at the row; empty: a deterministic proposal
};

// The acceptance rule. resample_target is deliberately wrong (a rejected
// proposal's row is drawn from p itself, not from max(0, p - q), which
// over-weights the tokens the draft favours); it exists so that the tests
// can show their distribution check fails on a wrong rule.
enum class AcceptRule : uint8_t { leviathan, resample_target };

// Buffers verify_row reuses (vocab floats each).
struct VerifyScratch {
  std::vector<float> logits, p;
};

// Draws from the target's sampler stream (one coin per proposal, one more on
// a rejection); accepts the token into nothing (the caller does).
RowVerdict verify_row(Sampler& target, const VerifyRow& row, VerifyScratch& scratch, AcceptRule rule = AcceptRule::leviathan);

// True when the sampler's choice is the argmax of the raw logits (no
// temperature, no adjustments): the device's greedy token stands for it.
bool greedy_on_device(const SamplerParams& p);

}  // namespace tessera
