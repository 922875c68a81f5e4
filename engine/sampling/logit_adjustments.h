#pragma once
// What a sequence's logits are adjusted by before sampling: the request's
// logit bias, and the penalties over the tokens it has seen. The history
// keeps the distinct prompt tokens and a count per generated token, so an
// adjustment costs O(distinct tokens), never a rescan of the sequence.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "tessera/sampling.h"

namespace tessera {

class TokenHistory {
 public:
  // The prompt the repetition penalty looks at (replaces an earlier one).
  void set_prompt(std::span<const int32_t> prompt);
  // One more generated token.
  void accept(int32_t token);

  bool in_prompt(int32_t token) const;
  int32_t generated_count(int32_t token) const;
  const std::vector<int32_t>& prompt_tokens() const { return prompt_tokens_; }  // sorted, distinct
  const std::unordered_map<int32_t, int32_t>& generated_counts() const { return generated_; }

 private:
  std::vector<int32_t> prompt_tokens_;
  std::unordered_map<int32_t, int32_t> generated_;
};

// Whether adjust_logits would change anything for these params.
bool adjusts_logits(const SamplerParams& params);

// In place, per token and in this order: logit_bias added; the repetition
// penalty (a token of the prompt or generated: a logit > 0 divided by it,
// else multiplied); then, for a token generated n > 0 times,
// presence_penalty + frequency_penalty * n subtracted. Token ids outside
// the span are ignored (validate(params, vocab_size) refuses such a bias).
void adjust_logits(const SamplerParams& params, const TokenHistory& history, std::span<float> logits);

}  // namespace tessera
