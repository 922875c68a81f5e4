#pragma once
// How many tokens one sequence proposes at its next step. With per-token
// acceptance probability a, k proposals yield (1 - a^(k+1)) / (1 - a)
// tokens per target pass; a pass scoring k of them costs 1 + c·k decode
// steps' time (c: what one more token adds to a target step and one draft
// token costs, over a decode step's time, measured by the engine). The k in
// [0, max_k] that maximizes tokens per unit of time is taken, from an
// acceptance rate that follows the sequence's recent passes (exponential
// forgetting), so speculation that does not pay turns itself down to 0; a
// sequence at 0 proposes one token every kProbeEvery steps to notice when
// it would pay again.
#include <cstdint>
#include <span>

namespace tessera {

class AdaptiveK {
 public:
  static constexpr int32_t kProbeEvery = 16;
  static constexpr double kForget = 0.8;  // weight of the past per observed pass

  AdaptiveK(int32_t max_k = 0, bool adaptive = true) : max_k_(max_k), adaptive_(adaptive) {}

  // Proposals for the next step; cost[k] (k = 0..max_k, cost[0] = 1) is a
  // pass's time with k proposals over a plain decode step's, which need not
  // be linear in k: a step runs the token bucket its tokens round up to, so
  // a 5-token pass costs what 8 tokens cost (ServingEngine::spec_costs).
  int32_t next(std::span<const double> cost);
  // The linear model, 1 + relative_cost * k.
  int32_t next(double relative_cost);
  // A pass scored `proposed` tokens and accepted the first `accepted`.
  void observe(int32_t proposed, int32_t accepted);
  // The per-token acceptance estimate (starts optimistic at kPrior).
  double acceptance() const { return trials_ > 0 ? successes_ / trials_ : kPrior; }
  int32_t max_k() const { return max_k_; }

  // Tokens per pass and per unit of cost at acceptance a with k proposals.
  static double tokens_per_pass(double a, int32_t k);

 private:
  static constexpr double kPrior = 0.6;
  int32_t max_k_;
  bool adaptive_;
  double successes_ = 0, trials_ = 0;
  int32_t idle_steps_ = 0;
};

}  // namespace tessera
