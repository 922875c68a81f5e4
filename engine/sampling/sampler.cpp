#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace tessera {
namespace {

// First index of the maximum; NaNs never win.
int32_t argmax(std::span<const float> x) {
  int32_t best = 0;
  for (int32_t i = 1; i < (int32_t)x.size(); ++i) {
    if (x[(size_t)i] > x[(size_t)best] || std::isnan(x[(size_t)best])) best = i;
  }
  return best;
}

// run.c's softmax, in place.
void softmax(std::span<float> x) {
  float max = x[0];
  for (float v : x) max = v > max ? v : max;
  float sum = 0.0f;
  for (float& v : x) {
    v = std::exp(v - max);
    sum += v;
  }
  for (float& v : x) v /= sum;
}

// run.c's sample_mult: the first index whose cumulative probability passes the coin.
int32_t sample_mult(std::span<const float> probs, float coin) {
  float cdf = 0.0f;
  for (size_t i = 0; i < probs.size(); ++i) {
    cdf += probs[i];
    if (coin < cdf) return (int32_t)i;
  }
  return (int32_t)probs.size() - 1;
}

// Min-p without top-k or top-p: sample_mult over the tokens at or above
// min_p times the largest probability, in index order, without sorting.
int32_t sample_mult_min_p(std::span<const float> probs, float min_p, float coin) {
  float max = 0.0f;
  for (float p : probs) max = p > max ? p : max;
  const float threshold = min_p * max;
  float kept = 0.0f;
  for (float p : probs) {
    if (p >= threshold) kept += p;
  }
  const float r = coin * kept;
  float cdf = 0.0f;
  int32_t last = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] >= threshold)) continue;
    cdf += probs[i];
    last = (int32_t)i;
    if (r < cdf) return last;
  }
  return last;
}

// NaN would break the strict weak order std::sort relies on.
float rank_of(float logit) { return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit; }

bool ranks_before(float rank_a, int32_t a, float rank_b, int32_t b) {
  return rank_a > rank_b || (rank_a == rank_b && a < b);
}

}  // namespace

Sampler::Sampler(SamplerParams params)
    : params_(std::move(params)), rng_state_(params_.seed != 0 ? params_.seed : 0x9e3779b97f4a7c15ull) {
  assert(validate(params_).is_ok());
}

// xorshift64*, exactly as run.c's random_u32 / random_f32.
uint32_t Sampler::random_u32() {
  rng_state_ ^= rng_state_ >> 12;
  rng_state_ ^= rng_state_ << 25;
  rng_state_ ^= rng_state_ >> 27;
  return (uint32_t)((rng_state_ * 0x2545F4914F6CDD1Dull) >> 32);
}

float Sampler::random_f32() { return (float)(random_u32() >> 8) / 16777216.0f; }

std::span<const float> Sampler::scores_of(std::span<const float> logits) {
  // Without adjustments the caller's logits are read in place: no copy, and
  // the arithmetic stays run.c's.
  if (!adjusts_logits(params_)) return logits;
  const size_t n = logits.size();
  if (scratch_.adjusted.size() < n) scratch_.adjusted.resize(n);
  const std::span<float> adjusted(scratch_.adjusted.data(), n);
  std::copy(logits.begin(), logits.end(), adjusted.begin());
  adjust(adjusted);
  return adjusted;
}

std::span<float> Sampler::scaled(std::span<const float> scores) {
  const size_t n = scores.size();
  if (scratch_.probs.size() < n) {
    scratch_.probs.resize(n);
    scratch_.candidates.resize(n);
  }
  const std::span<float> probs(scratch_.probs.data(), n);
  for (size_t i = 0; i < n; ++i) probs[i] = scores[i] / params_.temperature;
  return probs;
}

int32_t Sampler::sample(std::span<float> logits) {
  assert(!logits.empty());
  const std::span<const float> scores = scores_of(logits);
  if (params_.temperature == 0.0f) return argmax(scores);
  const std::span<float> probs = scaled(scores);
  const float coin = random_f32();
  Kept kept;
  if (params_.top_k > 0 && (size_t)params_.top_k < scores.size()) {
    kept = keep_top_k(scores);
  } else {
    softmax(probs);
    if (params_.top_p < 1.0f) {
      kept = keep_top_p(scores);
    } else {
      return params_.min_p > 0.0f ? sample_mult_min_p(probs, params_.min_p, coin) : sample_mult(probs, coin);
    }
  }
  return kept.only >= 0 ? kept.only : draw(kept.last, kept.cumulative, coin);
}

void Sampler::distribution(std::span<const float> logits, std::span<float> out) {
  assert(!logits.empty() && out.size() == logits.size());
  const std::span<const float> scores = scores_of(logits);
  std::fill(out.begin(), out.end(), 0.0f);
  if (params_.temperature == 0.0f) {
    out[(size_t)argmax(scores)] = 1.0f;
    return;
  }
  const std::span<float> probs = scaled(scores);
  if (params_.top_k > 0 && (size_t)params_.top_k < scores.size()) return spread(keep_top_k(scores), out);
  softmax(probs);
  if (params_.top_p < 1.0f) return spread(keep_top_p(scores), out);
  // Min-p keeps the tokens at or above min_p times the largest probability.
  float threshold = 0.0f;
  if (params_.min_p > 0.0f) {
    for (float p : probs) threshold = p > threshold ? p : threshold;
    threshold *= params_.min_p;
  }
  float kept = 0.0f;
  for (float p : probs) kept += p >= threshold ? p : 0.0f;
  for (size_t i = 0; i < probs.size(); ++i) out[i] = probs[i] >= threshold ? probs[i] / kept : 0.0f;
}

void Sampler::spread(const Kept& kept, std::span<float> out) const {
  if (kept.only >= 0) {
    out[(size_t)kept.only] = 1.0f;
    return;
  }
  const std::vector<Candidate>& candidates = scratch_.candidates;
  const size_t last = min_p_end(kept.last);
  float mass = kept.cumulative;
  if (last != kept.last) {
    mass = 0.0f;
    for (size_t j = 0; j <= last; ++j) mass += candidates[j].value;
  }
  for (size_t j = 0; j <= last; ++j) out[(size_t)candidates[j].index] = candidates[j].value / mass;
}

int32_t Sampler::draw_weighted(std::span<const float> weights) {
  float total = 0.0f;
  for (float w : weights) total += w;
  const float r = random_f32() * total;
  float cdf = 0.0f;
  int32_t last = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] > 0.0f)) continue;
    cdf += weights[i];
    last = (int32_t)i;
    if (r < cdf) return last;
  }
  return last;
}

// Keeps the k largest logits, renormalizes them with a softmax of their own,
// then applies the nucleus within them (min-p: draw / spread).
Sampler::Kept Sampler::keep_top_k(std::span<const float> logits) {
  const size_t n = logits.size();
  const size_t k = (size_t)params_.top_k;
  std::vector<Candidate>& candidates = scratch_.candidates;
  for (size_t i = 0; i < n; ++i) {
    const float rank = rank_of(logits[i]);
    candidates[i] = {rank, std::isnan(logits[i]) ? rank : scratch_.probs[i], (int32_t)i};
  }
  auto before = [](const Candidate& a, const Candidate& b) { return ranks_before(a.rank, a.index, b.rank, b.index); };
  const auto first = candidates.begin();
  std::nth_element(first, first + (ptrdiff_t)k, first + (ptrdiff_t)n, before);
  std::sort(first, first + (ptrdiff_t)k, before);

  const float max = candidates[0].value;
  if (!std::isfinite(max)) return {.only = candidates[0].index};
  float mass = 0.0f;
  for (size_t j = 0; j < k; ++j) {
    candidates[j].value = std::exp(candidates[j].value - max);
    mass += candidates[j].value;
  }
  size_t last = k - 1;
  float cumulative = mass;
  if (params_.top_p < 1.0f) {
    const float threshold = params_.top_p * mass;
    cumulative = 0.0f;
    for (size_t j = 0; j < k; ++j) {
      cumulative += candidates[j].value;
      if (cumulative > threshold) {
        last = j;
        break;
      }
    }
  }
  return {last, cumulative};
}

// run.c's sample_topp over the probabilities. Tokens below (1 - top_p) /
// (n - 1) cannot be in the nucleus (all of them together hold less than
// 1 - top_p), so only the rest is sorted. The nucleus ends at the first token
// whose cumulative probability exceeds top_p; min-p may end it sooner.
Sampler::Kept Sampler::keep_top_p(std::span<const float> logits) {
  const size_t n = logits.size();
  const std::span<const float> probs(scratch_.probs.data(), n);
  std::vector<Candidate>& candidates = scratch_.candidates;
  const float cutoff = (1.0f - params_.top_p) / (float)(n - 1);
  size_t n0 = 0;
  for (size_t i = 0; i < n; ++i) {
    if (probs[i] >= cutoff) candidates[n0++] = {rank_of(logits[i]), probs[i], (int32_t)i};
  }
  // Nearly uniform rows with a tiny top_p leave nothing above the cutoff
  // (run.c then reads before its array); the nucleus is the top token.
  if (n0 == 0) return {.only = argmax(logits)};
  std::sort(candidates.begin(), candidates.begin() + (ptrdiff_t)n0, [](const Candidate& a, const Candidate& b) {
    return ranks_before(a.rank, a.index, b.rank, b.index);
  });
  float cumulative = 0.0f;
  size_t last = n0 - 1;
  for (size_t i = 0; i < n0; ++i) {
    cumulative += candidates[i].value;
    if (cumulative > params_.top_p) {
      last = i;
      break;
    }
  }
  return {last, cumulative};
}

// The last kept candidate once min-p drops those below min_p times the top
// one. Candidates are sorted, so what min-p keeps is a prefix of them.
size_t Sampler::min_p_end(size_t last) const {
  if (params_.min_p <= 0.0f) return last;
  const std::vector<Candidate>& candidates = scratch_.candidates;
  const float threshold = params_.min_p * candidates[0].value;
  for (size_t j = 1; j <= last; ++j) {
    if (candidates[j].value < threshold) return j - 1;
  }
  return last;
}

// Draws among candidates [0, last] (weights: their values) with run.c's
// cumulative walk; `cumulative` is their sum unless min-p cut them shorter.
int32_t Sampler::draw(size_t last, float cumulative, float coin) const {
  const std::vector<Candidate>& candidates = scratch_.candidates;
  const size_t kept = min_p_end(last);
  if (kept != last) {
    last = kept;
    cumulative = 0.0f;
    for (size_t j = 0; j <= last; ++j) cumulative += candidates[j].value;
  }
  const float r = coin * cumulative;
  float cdf = 0.0f;
  for (size_t j = 0; j <= last; ++j) {
    cdf += candidates[j].value;
    if (r < cdf) return candidates[j].index;
  }
  return candidates[last].index;
}

}  // namespace tessera
