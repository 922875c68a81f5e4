#pragma once
// How a sequence's logits become a token: the logits are adjusted (logit
// bias, repetition, presence and frequency penalties), then greedy at
// temperature 0, else temperature, top-k, top-p (nucleus), min-p and a seeded
// draw that follows llama2.c's run.c, so a run.c seed gives run.c's tokens
// (with the adjustments and min-p off).
#include <cstdint>
#include <utility>
#include <vector>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

struct SamplerParams {
  float temperature = 1.0f;  // 0 = greedy (argmax)
  float top_p = 0.9f;        // nucleus mass; >= 1 = off
  int32_t top_k = 0;         // keep the k most probable; 0 = off
  uint64_t seed = 0;         // 0 is replaced by a fixed nonzero constant (0 is xorshift's fixed point)
  // Keep the tokens whose probability is at least min_p times the most
  // probable one's; 0 = off.
  float min_p = 0.0f;
  // OpenAI's penalties over the tokens generated so far (not the prompt): a
  // token generated n > 0 times has presence_penalty + frequency_penalty * n
  // subtracted from its logit.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // vLLM's and Hugging Face's, over the prompt and the generated tokens: a
  // token seen there has a positive logit divided by it, a negative one
  // multiplied; 1 = off.
  float repetition_penalty = 1.0f;
  // OpenAI's logit_bias: {token id, bias} added to that token's logit.
  std::vector<std::pair<int32_t, float>> logit_bias = {};
};

// temperature >= 0 (finite), 0 < top_p <= 1, top_k >= 0, 0 <= min_p <= 1,
// presence and frequency penalties in [-2, 2], repetition_penalty > 0
// (finite), each logit_bias in [-100, 100] for a token id >= 0 named once.
// Messages name the CLI flag for the first three ("--temp: must be >= 0, got
// -1") and the field for the others ("min_p: must be in [0, 1], got 2").
TESSERA_API Status validate(const SamplerParams& params);
// The same, and every logit_bias token id inside [0, vocab_size):
// "logit_bias: token id 70000 is outside the vocabulary [0, 32000)".
TESSERA_API Status validate(const SamplerParams& params, int32_t vocab_size);

// One token's log-probability: the log-softmax of the model's raw logits
// (before bias, penalties and temperature, as vLLM and OpenAI report it).
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

}  // namespace tessera
