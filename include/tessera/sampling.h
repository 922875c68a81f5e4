#pragma once
// How Generation::sample() turns logits into a token: greedy at temperature
// 0, else temperature, top-k, top-p (nucleus) and a seeded draw that follows
// llama2.c's run.c, so a run.c seed gives run.c's tokens.
#include <cstdint>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

struct SamplerParams {
  float temperature = 1.0f;  // 0 = greedy (argmax)
  float top_p = 0.9f;        // nucleus mass; >= 1 = off
  int32_t top_k = 0;         // keep the k most probable; 0 = off
  uint64_t seed = 0;         // 0 is replaced by a fixed nonzero constant (0 is xorshift's fixed point)
};

// The log-probability of one token (log-softmax of the model's raw logits).
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;
};

// temperature >= 0 (finite), 0 < top_p <= 1, top_k >= 0. Messages name the
// CLI flag: "--temp: must be >= 0, got -1".
TESSERA_API Status validate(const SamplerParams& params);

}  // namespace tessera
