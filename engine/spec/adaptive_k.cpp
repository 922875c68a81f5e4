#include "engine/spec/adaptive_k.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera {

double AdaptiveK::tokens_per_pass(double a, int32_t k) {
  if (a >= 1.0) return k + 1.0;
  return (1.0 - std::pow(a, k + 1)) / (1.0 - a);
}

int32_t AdaptiveK::next(double relative_cost) {
  std::vector<double> linear((size_t)std::max(max_k_, 0) + 1);
  for (int32_t k = 0; k < (int32_t)linear.size(); ++k) linear[(size_t)k] = 1.0 + relative_cost * k;
  return next(linear);
}

int32_t AdaptiveK::next(std::span<const double> cost) {
  if (!adaptive_ || max_k_ == 0) return max_k_;
  const double a = acceptance();
  int32_t best = 0;
  double best_rate = 1.0;  // k = 0: one token per plain step
  for (int32_t k = 1; k <= max_k_ && k < (int32_t)cost.size(); ++k) {
    const double rate = tokens_per_pass(a, k) / (cost[(size_t)k] / cost[0]);
    if (rate > best_rate * 1.02) {  // a margin, so noise around break-even keeps speculation off
      best = k;
      best_rate = rate;
    }
  }
  if (best > 0) {
    idle_steps_ = 0;
    return best;
  }
  if (++idle_steps_ >= kProbeEvery) {
    idle_steps_ = 0;
    return 1;
  }
  return 0;
}

void AdaptiveK::observe(int32_t proposed, int32_t accepted) {
  if (proposed <= 0) return;
  // Each accepted proposal is a success; the first rejected one a failure;
  // those after a rejection were never tried.
  const double trials = accepted + (accepted < proposed ? 1 : 0);
  successes_ = kForget * successes_ + accepted;
  trials_ = kForget * trials_ + trials;
}

}  // namespace tessera
