#pragma once
// The log-probabilities a request may ask for with each token (OpenAI's
// logprobs / top_logprobs): the log-softmax of the model's raw logits,
// before logit bias, penalties and temperature, as vLLM reports them by
// default.
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/sampling.h"

namespace tessera {

// `chosen_out` (when not null) gets the chosen token's log-probability;
// `top_out` (when not null) is replaced by the min(top_n, vocabulary) most
// probable tokens, by log-probability descending, ties by lower id. NaN
// logits count as -inf. Needs a finite logit among `logits`, and `chosen`
// inside them. The sum is taken in double after subtracting the maximum.
// Costs O(vocabulary), plus O(log top_n) for each token that enters the top
// list while it is scanned (top_n log top_n on most rows, vocabulary * log
// top_n at worst, on logits sorted ascending). Allocates nothing once
// `top_out` has room for top_n entries.
void compute_logprobs(std::span<const float> logits, int32_t chosen, int32_t top_n, TokenLogprob* chosen_out,
                      std::vector<TokenLogprob>* top_out);

}  // namespace tessera
