#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace tessera {
namespace {

std::string format_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", (double)v);
  return buf;
}

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

// NaN would break the strict weak order std::sort relies on.
float rank_of(float logit) { return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit; }

bool ranks_before(float rank_a, int32_t a, float rank_b, int32_t b) {
  return rank_a > rank_b || (rank_a == rank_b && a < b);
}

}  // namespace

Status validate(const SamplerParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) {
    return invalid_argument("--temp: must be a finite number >= 0, got " + format_float(p.temperature));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return invalid_argument("--top-p: must be in (0, 1], got " + format_float(p.top_p));
  }
  if (p.top_k < 0) return invalid_argument("--top-k: must be >= 0, got " + std::to_string(p.top_k));
  return Status::ok();
}

Sampler::Sampler(SamplerParams params)
    : params_(params), rng_state_(params.seed != 0 ? params.seed : 0x9e3779b97f4a7c15ull) {
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

int32_t Sampler::sample(std::span<float> logits) {
  assert(!logits.empty());
  if (params_.temperature == 0.0f) return argmax(logits);
  const size_t n = logits.size();
  if (probs_.size() < n) {
    probs_.resize(n);
    candidates_.resize(n);
  }
  const std::span<float> probs(probs_.data(), n);
  for (size_t i = 0; i < n; ++i) probs[i] = logits[i] / params_.temperature;
  const float coin = random_f32();
  if (params_.top_k > 0 && (size_t)params_.top_k < n) return sample_top_k(logits, coin);
  softmax(probs);
  if (params_.top_p >= 1.0f) return sample_mult(probs, coin);
  return sample_top_p(logits, coin);
}

// Keeps the k largest logits, renormalizes them with a softmax of their own,
// then applies the nucleus within them.
int32_t Sampler::sample_top_k(std::span<const float> logits, float coin) {
  const size_t n = logits.size();
  const size_t k = (size_t)params_.top_k;
  for (size_t i = 0; i < n; ++i) {
    const float rank = rank_of(logits[i]);
    candidates_[i] = {rank, std::isnan(logits[i]) ? rank : probs_[i], (int32_t)i};
  }
  auto before = [](const Candidate& a, const Candidate& b) { return ranks_before(a.rank, a.index, b.rank, b.index); };
  const auto first = candidates_.begin();
  std::nth_element(first, first + (ptrdiff_t)k, first + (ptrdiff_t)n, before);
  std::sort(first, first + (ptrdiff_t)k, before);

  const float max = candidates_[0].value;
  if (!std::isfinite(max)) return candidates_[0].index;
  float mass = 0.0f;
  for (size_t j = 0; j < k; ++j) {
    candidates_[j].value = std::exp(candidates_[j].value - max);
    mass += candidates_[j].value;
  }
  size_t last = k - 1;
  float cumulative = mass;
  if (params_.top_p < 1.0f) {
    const float threshold = params_.top_p * mass;
    cumulative = 0.0f;
    for (size_t j = 0; j < k; ++j) {
      cumulative += candidates_[j].value;
      if (cumulative > threshold) {
        last = j;
        break;
      }
    }
  }
  const float r = coin * cumulative;
  float cdf = 0.0f;
  for (size_t j = 0; j <= last; ++j) {
    cdf += candidates_[j].value;
    if (r < cdf) return candidates_[j].index;
  }
  return candidates_[last].index;
}

// run.c's sample_topp over probs_. Tokens below (1 - top_p) / (n - 1) cannot
// be in the nucleus (all of them together hold less than 1 - top_p), so only
// the rest is sorted. The nucleus ends at the first token whose cumulative
// probability exceeds top_p.
int32_t Sampler::sample_top_p(std::span<const float> logits, float coin) {
  const size_t n = logits.size();
  const float cutoff = (1.0f - params_.top_p) / (float)(n - 1);
  size_t n0 = 0;
  for (size_t i = 0; i < n; ++i) {
    if (probs_[i] >= cutoff) candidates_[n0++] = {rank_of(logits[i]), probs_[i], (int32_t)i};
  }
  // Nearly uniform rows with a tiny top_p leave nothing above the cutoff
  // (run.c then reads before its array); the nucleus is the top token.
  if (n0 == 0) return argmax(logits);
  std::sort(candidates_.begin(), candidates_.begin() + (ptrdiff_t)n0, [](const Candidate& a, const Candidate& b) {
    return ranks_before(a.rank, a.index, b.rank, b.index);
  });
  float cumulative = 0.0f;
  size_t last = n0 - 1;
  for (size_t i = 0; i < n0; ++i) {
    cumulative += candidates_[i].value;
    if (cumulative > params_.top_p) {
      last = i;
      break;
    }
  }
  const float r = coin * cumulative;
  float cdf = 0.0f;
  for (size_t i = 0; i <= last; ++i) {
    cdf += candidates_[i].value;
    if (r < cdf) return candidates_[i].index;
  }
  return candidates_[last].index;
}

}  // namespace tessera
