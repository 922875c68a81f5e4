#pragma once
// What the sampler tests compare draws against: the softmax in double and
// Pearson's chi-square statistic of observed counts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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

inline uint64_t seed_for(Rng& rng) { return rng.engine()() | 1; }

}  // namespace tessera::testing
