#include "engine/sampling/logit_adjustments.h"

#include <algorithm>

namespace tessera {
namespace {

bool inside(int32_t token, std::span<const float> logits) { return token >= 0 && (size_t)token < logits.size(); }

float repetition_penalized(float logit, float penalty) { return logit > 0.0f ? logit / penalty : logit * penalty; }

}  // namespace

void TokenHistory::set_prompt(std::span<const int32_t> prompt) {
  prompt_tokens_.assign(prompt.begin(), prompt.end());
  std::sort(prompt_tokens_.begin(), prompt_tokens_.end());
  prompt_tokens_.erase(std::unique(prompt_tokens_.begin(), prompt_tokens_.end()), prompt_tokens_.end());
}

void TokenHistory::accept(int32_t token) { ++generated_[token]; }

bool TokenHistory::in_prompt(int32_t token) const {
  return std::binary_search(prompt_tokens_.begin(), prompt_tokens_.end(), token);
}

int32_t TokenHistory::generated_count(int32_t token) const {
  const auto it = generated_.find(token);
  return it == generated_.end() ? 0 : it->second;
}

bool adjusts_logits(const SamplerParams& p) {
  return !p.logit_bias.empty() || p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
         p.frequency_penalty != 0.0f;
}

void adjust_logits(const SamplerParams& p, const TokenHistory& history, std::span<float> logits) {
  for (const auto& [token, bias] : p.logit_bias) {
    if (inside(token, logits)) logits[(size_t)token] += bias;
  }
  const bool repetition = p.repetition_penalty != 1.0f;
  if (repetition) {
    for (int32_t token : history.prompt_tokens()) {
      if (inside(token, logits)) logits[(size_t)token] = repetition_penalized(logits[(size_t)token], p.repetition_penalty);
    }
  }
  // Each generated token once: the repetition penalty where the prompt did
  // not already apply it, then presence and frequency.
  const bool presence_or_frequency = p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  if (!repetition && !presence_or_frequency) return;
  for (const auto& [token, count] : history.generated_counts()) {
    if (!inside(token, logits)) continue;
    float& logit = logits[(size_t)token];
    if (repetition && !history.in_prompt(token)) logit = repetition_penalized(logit, p.repetition_penalty);
    if (presence_or_frequency) logit -= p.presence_penalty + p.frequency_penalty * (float)count;
  }
}

}  // namespace tessera
