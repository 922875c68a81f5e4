#pragma once
// Turns one row of logits into a token id: greedy at temperature 0, else
// temperature → softmax → top-k → top-p (nucleus) → a draw from a seeded
// xorshift64* stream, so a seed replays the same tokens. With top_k off the
// arithmetic follows llama2.c's run.c (sample_mult / sample_topp, one coin per
// call), so a run.c seed gives run.c's tokens (ties in sorting aside).
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "tessera/sampling.h"

namespace tessera {

class Sampler {
 public:
  // `params` must pass validate().
  explicit Sampler(SamplerParams params);

  // Returns a token id in [0, logits.size()); logits must not be empty.
  // Tokens are ranked by their logits (ties: lower index first), so top_k 1
  // and a tiny top_p give exactly the temperature-0 argmax even where two
  // probabilities round to the same float. The logits are left as they are
  // (the span is mutable so that a later version may work in place).
  // Allocates only the first time it sees a vocabulary larger than before.
  int32_t sample(std::span<float> logits);

  const SamplerParams& params() const { return params_; }

 private:
  struct Candidate {
    float rank;   // the caller's logit (NaN as -inf): the sort key
    float value;  // scaled logit, then probability
    int32_t index;
  };

  uint32_t random_u32();
  float random_f32();  // [0, 1)
  int32_t sample_top_k(std::span<const float> logits, float coin);
  int32_t sample_top_p(std::span<const float> logits, float coin);

  SamplerParams params_;
  uint64_t rng_state_;
  std::vector<float> probs_;          // logits / temperature, then their softmax
  std::vector<Candidate> candidates_;
};

}  // namespace tessera
