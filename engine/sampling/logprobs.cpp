#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace tessera {
namespace {

bool more_probable(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.token < b.token);
}

// log Σ exp(logits), in double around the maximum so that nothing overflows.
double log_sum_exp(std::span<const float> logits) {
  double max = -std::numeric_limits<double>::infinity();
  for (float l : logits) {
    if (l > max) max = l;
  }
  double sum = 0.0;
  for (float l : logits) {
    if (!std::isnan(l)) sum += std::exp((double)l - max);
  }
  return max + std::log(sum);
}

}  // namespace

void compute_logprobs(std::span<const float> logits, int32_t chosen, int32_t top_n, TokenLogprob* chosen_out,
                      std::vector<TokenLogprob>* top_out) {
  assert(chosen >= 0 && (size_t)chosen < logits.size());
  const double lse = log_sum_exp(logits);
  auto logprob = [lse](float logit) {
    return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : (float)((double)logit - lse);
  };
  if (chosen_out) *chosen_out = {chosen, logprob(logits[(size_t)chosen])};
  if (!top_out) return;

  // A heap of the best top_n so far, its least probable entry in front.
  std::vector<TokenLogprob>& top = *top_out;
  top.clear();
  const size_t n = std::min(logits.size(), (size_t)std::max(top_n, 0));
  if (n == 0) return;
  for (size_t i = 0; i < logits.size(); ++i) {
    const TokenLogprob entry{(int32_t)i, logprob(logits[i])};
    if (top.size() < n) {
      top.push_back(entry);
      std::push_heap(top.begin(), top.end(), more_probable);
    } else if (more_probable(entry, top.front())) {
      std::pop_heap(top.begin(), top.end(), more_probable);
      top.back() = entry;
      std::push_heap(top.begin(), top.end(), more_probable);
    }
  }
  std::sort_heap(top.begin(), top.end(), more_probable);
}

}  // namespace tessera
