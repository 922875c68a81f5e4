#pragma once
// What the sampler tests compare against: the softmax in double, Pearson's
// chi-square statistic of observed counts, and the adjusted logits computed
// from the definitions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/sampling/sampler.h"
#include "support/random.h"

namespace tessera::testing {

inline std::vector<double> softmax_double(const std::vector<float>& logits, double temperature) {
  const double max = *std::max_element(logits.begin(), logits.end()) / temperature;
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] / temperature - max);
  for (double& v : p) v /= sum;
  return p;
}

// Pearson's statistic of `counts` against `probs` over `draws` draws; a token
// of probability 0 must never be drawn.
inline double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int draws) {
  double x2 = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0) {
      REQUIRE_MESSAGE(counts[i] == 0, "token " << i << " has probability 0 and was drawn " << counts[i] << " times");
      continue;
    }
    const double e = probs[i] * draws;
    x2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x2;
}

// How often each token comes out of `draws` samples of the same logits.
inline std::vector<int> draw_counts(Sampler& s, const std::vector<float>& logits, int draws) {
  std::vector<int> counts(logits.size());
  std::vector<float> work;
  for (int i = 0; i < draws; ++i) {
    work = logits;
    const int32_t t = s.sample(work);
    REQUIRE(t >= 0);
    REQUIRE(t < (int32_t)logits.size());
    ++counts[(size_t)t];
  }
  return counts;
}

// Each token's logit as the definitions give it, counting the whole history
// afresh: bias added; the repetition penalty if the token is in the prompt
// or was generated; presence + frequency * count subtracted if generated.
inline std::vector<float> reference_adjusted(const std::vector<float>& logits, const SamplerParams& p,
                                             const std::vector<int32_t>& prompt,
                                             const std::vector<int32_t>& generated) {
  std::vector<float> out = logits;
  for (int32_t t = 0; t < (int32_t)out.size(); ++t) {
    float l = out[(size_t)t];
    for (const auto& [id, bias] : p.logit_bias) {
      if (id == t) l += bias;
    }
    const int count = (int)std::count(generated.begin(), generated.end(), t);
    const bool seen = count > 0 || std::find(prompt.begin(), prompt.end(), t) != prompt.end();
    if (seen) l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    if (count > 0) l -= p.presence_penalty + p.frequency_penalty * (float)count;
    out[(size_t)t] = l;
  }
  return out;
}

inline uint64_t seed_for(Rng& rng) { return rng.engine()() | 1; }

}  // namespace tessera::testing
