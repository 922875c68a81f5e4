// The sampler against independent oracles: argmax by std::max_element, the
// softmax in double, the nucleus computed by sorting in the test, and
// llama2.c's run.c sampling transcribed below.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "engine/sampling/sampler.h"
#include "sampling_oracle.h"
#include "support/random.h"

using tessera::Sampler;
using tessera::SamplerParams;
using namespace tessera::testing;

namespace {

// llama2.c run.c (Karpathy, MIT), sampling functions as published.
namespace runc {
struct ProbIndex { float prob; int index; };
unsigned int random_u32(unsigned long long* state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return (*state * 0x2545F4914F6CDD1Dull) >> 32;
}
float random_f32(unsigned long long* state) { return (random_u32(state) >> 8) / 16777216.0f; }
void softmax(float* x, int size) {
  float max_val = x[0];
  for (int i = 1; i < size; i++) if (x[i] > max_val) max_val = x[i];
  float sum = 0.0f;
  for (int i = 0; i < size; i++) { x[i] = expf(x[i] - max_val); sum += x[i]; }
  for (int i = 0; i < size; i++) x[i] /= sum;
}
int sample_mult(float* probabilities, int n, float coin) {
  float cdf = 0.0f;
  for (int i = 0; i < n; i++) { cdf += probabilities[i]; if (coin < cdf) return i; }
  return n - 1;
}
int compare(const void* a, const void* b) {
  const ProbIndex* a_ = (const ProbIndex*)a;
  const ProbIndex* b_ = (const ProbIndex*)b;
  if (a_->prob > b_->prob) return -1;
  if (a_->prob < b_->prob) return 1;
  return 0;
}
int sample_topp(float* probabilities, int n, float topp, ProbIndex* probindex, float coin) {
  int n0 = 0;
  const float cutoff = (1.0f - topp) / (n - 1);
  for (int i = 0; i < n; i++) {
    if (probabilities[i] >= cutoff) { probindex[n0].index = i; probindex[n0].prob = probabilities[i]; n0++; }
  }
  qsort(probindex, n0, sizeof(ProbIndex), compare);
  float cumulative_prob = 0.0f;
  int last_idx = n0 - 1;
  for (int i = 0; i < n0; i++) {
    cumulative_prob += probindex[i].prob;
    if (cumulative_prob > topp) { last_idx = i; break; }
  }
  float r = coin * cumulative_prob;
  float cdf = 0.0f;
  for (int i = 0; i <= last_idx; i++) { cdf += probindex[i].prob; if (r < cdf) return probindex[i].index; }
  return probindex[last_idx].index;
}
int sample(std::vector<float> logits, float temperature, float topp, unsigned long long* rng_state) {
  const int n = (int)logits.size();
  for (int q = 0; q < n; q++) logits[q] /= temperature;
  softmax(logits.data(), n);
  float coin = random_f32(rng_state);
  if (topp <= 0 || topp >= 1) return sample_mult(logits.data(), n, coin);
  std::vector<ProbIndex> probindex((size_t)n);
  return sample_topp(logits.data(), n, topp, probindex.data(), coin);
}
}  // namespace runc

}  // namespace

TEST_CASE("sampler at temperature 0 returns the first index of the maximum") {
  tessera::testing::Rng rng(101);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits = rng.floats((size_t)rng.integer(1, 5000), -10, 10);
    if (trial % 5 == 0 && logits.size() > 3) logits[logits.size() - 1] = logits[1] = 11.0f;  // a tie
    const int32_t expected = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
    Sampler s({.temperature = 0.0f, .top_p = 0.9f, .top_k = 0, .seed = seed_for(rng)});
    CHECK(s.sample(logits) == expected);
  }
}

TEST_CASE("sampler with the same seed replays the same tokens, and another seed does not") {
  tessera::testing::Rng rng(102);
  const std::vector<float> logits = rng.floats(512, -2, 2);
  const uint64_t seed = seed_for(rng);
  for (SamplerParams p : {SamplerParams{1.0f, 1.0f, 0, seed}, SamplerParams{0.8f, 0.9f, 0, seed},
                          SamplerParams{1.2f, 0.95f, 40, seed}}) {
    Sampler a(p), b(p), c({p.temperature, p.top_p, p.top_k, seed + 1});
    std::vector<int32_t> ta, tb, tc;
    for (int i = 0; i < 200; ++i) {
      std::vector<float> w = logits;
      ta.push_back(a.sample(w));
      w = logits;
      tb.push_back(b.sample(w));
      w = logits;
      tc.push_back(c.sample(w));
    }
    CHECK(ta == tb);
    CHECK(ta != tc);
  }
}

TEST_CASE("sampler without top_k draws exactly the tokens llama2.c's run.c draws for the same seed") {
  tessera::testing::Rng rng(103);
  for (float top_p : {1.0f, 0.9f, 0.5f}) {
    for (float temperature : {1.0f, 0.7f}) {
      const std::vector<float> logits = rng.floats(2000, -4, 4);
      const uint64_t seed = seed_for(rng);
      Sampler s({temperature, top_p, 0, seed});
      unsigned long long state = seed;
      for (int i = 0; i < 300; ++i) {
        std::vector<float> w = logits;
        const int ours = s.sample(w);
        const int theirs = runc::sample(logits, temperature, top_p, &state);
        REQUIRE_MESSAGE(ours == theirs, "draw " << i << " temp " << temperature << " top_p " << top_p);
      }
    }
  }
}

TEST_CASE("a sampler told its prompt and tokens, with every new parameter at its default, still draws run.c's tokens") {
  tessera::testing::Rng rng(109);
  const std::vector<float> logits = rng.floats(3000, -4, 4);
  const uint64_t seed = seed_for(rng);
  SamplerParams p{.temperature = 0.9f, .top_p = 0.8f, .top_k = 0, .seed = seed};
  p.min_p = 0.0f;
  p.presence_penalty = p.frequency_penalty = 0.0f;
  p.repetition_penalty = 1.0f;
  Sampler s(p);
  std::vector<int32_t> prompt(40);
  for (int32_t& t : prompt) t = rng.integer(0, 2999);
  s.set_prompt(prompt);
  unsigned long long state = seed;
  for (int i = 0; i < 300; ++i) {
    std::vector<float> w = logits;
    const int ours = s.sample(w);
    REQUIRE_MESSAGE(ours == runc::sample(logits, p.temperature, p.top_p, &state), "draw " << i);
    CHECK(w == logits);  // the caller's logits are left as they are
    s.accept(ours);
  }
}

TEST_CASE("top_k 1 always returns the argmax") {
  tessera::testing::Rng rng(104);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits = rng.floats((size_t)rng.integer(2, 3000), -3, 3);
    const int32_t expected = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
    Sampler s({1.5f, trial % 2 ? 1.0f : 0.9f, 1, seed_for(rng)});
    for (int i = 0; i < 5; ++i) {
      std::vector<float> w = logits;
      CHECK(s.sample(w) == expected);
    }
  }
}

TEST_CASE("a tiny top_p always returns the argmax, even on a nearly flat distribution") {
  tessera::testing::Rng rng(105);
  for (int trial = 0; trial < 40; ++trial) {
    // Odd trials are nearly uniform: every probability is below run.c's
    // (1 - top_p) / (n - 1) cutoff.
    const float spread = trial % 2 ? 1e-3f : 5.0f;
    std::vector<float> logits = rng.floats((size_t)rng.integer(2, 3000), -spread, spread);
    const int32_t expected = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
    CAPTURE(trial);
    CAPTURE(logits.size());
    Sampler s({1.0f, 1e-6f, 0, seed_for(rng)});
    for (int i = 0; i < 5; ++i) {
      std::vector<float> w = logits;
      CHECK(s.sample(w) == expected);
    }
  }
}

TEST_CASE("draws without truncation follow the softmax of logits / temperature") {
  tessera::testing::Rng rng(106);
  for (float temperature : {1.0f, 0.6f}) {
    const std::vector<float> logits = rng.floats(10, -1.5f, 1.5f);
    Sampler s({temperature, 1.0f, 0, seed_for(rng)});
    const int draws = 100000;
    const std::vector<int> counts = draw_counts(s, logits, draws);
    // 9 degrees of freedom: mean 9, sd 4.2; 60 is p < 1e-9.
    CHECK(chi_square(counts, softmax_double(logits, temperature), draws) < 60.0);
  }
}

TEST_CASE("top_k never returns a token outside the k largest and follows their renormalized softmax") {
  tessera::testing::Rng rng(107);
  const size_t n = 1000;
  const int k = 6;
  const std::vector<float> logits = rng.floats(n, -3, 3);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[(size_t)a] > logits[(size_t)b]; });
  std::vector<float> kept(n, -INFINITY);
  for (int j = 0; j < k; ++j) kept[(size_t)order[(size_t)j]] = logits[(size_t)order[(size_t)j]];
  std::vector<double> expected = softmax_double(kept, 1.0);

  Sampler s({1.0f, 1.0f, k, seed_for(rng)});
  const int draws = 60000;
  const std::vector<int> counts = draw_counts(s, logits, draws);
  for (size_t i = 0; i < n; ++i) {
    if (expected[i] == 0) REQUIRE_MESSAGE(counts[i] == 0, "token " << i << " is not among the " << k << " largest");
  }
  CHECK(chi_square(counts, expected, draws) < 60.0);  // 5 degrees of freedom
}

TEST_CASE("top_p draws stay inside the nucleus and follow its renormalized softmax") {
  tessera::testing::Rng rng(108);
  for (int top_k : {0, 8}) {
    const std::vector<float> logits = rng.floats(12, -2, 2);
    // The oracle's nucleus within the top_k set: the most probable tokens up
    // to and including the first whose cumulative probability exceeds top_p.
    std::vector<float> pool = logits;
    std::vector<int> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[(size_t)a] > logits[(size_t)b]; });
    if (top_k) {
      for (size_t j = (size_t)top_k; j < order.size(); ++j) pool[(size_t)order[j]] = -INFINITY;
    }
    const std::vector<double> p = softmax_double(pool, 1.0);
    // top_p halfway between two cumulative sums, so rounding cannot move the boundary.
    double cum = 0;
    std::vector<double> cums;
    for (int i : order) cums.push_back(cum += p[(size_t)i]);
    const size_t nucleus = 4;
    const float top_p = (float)(0.5 * (cums[nucleus - 2] + cums[nucleus - 1]));
    std::vector<float> nucleus_logits(logits.size(), -INFINITY);
    for (size_t j = 0; j < nucleus; ++j) nucleus_logits[(size_t)order[j]] = logits[(size_t)order[j]];
    const std::vector<double> expected = softmax_double(nucleus_logits, 1.0);

    Sampler s({1.0f, top_p, top_k, seed_for(rng)});
    const int draws = 60000;
    const std::vector<int> counts = draw_counts(s, logits, draws);
    CHECK(chi_square(counts, expected, draws) < 60.0);  // 3 degrees of freedom
  }
}

TEST_CASE("validate names the flag and the offending value") {
  CHECK(tessera::validate(SamplerParams{}).is_ok());
  CHECK(tessera::validate({0.0f, 1.0f, 0, 0}).is_ok());

  const tessera::Status temp = tessera::validate({-1.0f, 0.9f, 0, 0});
  CHECK(temp.code() == tessera::StatusCode::invalid_argument);
  CHECK(temp.message().find("--temp") != std::string::npos);
  CHECK(temp.message().find("got -1") != std::string::npos);
  CHECK_FALSE(tessera::validate({NAN, 0.9f, 0, 0}).is_ok());

  for (float bad : {0.0f, -0.5f, 1.5f, NAN}) {
    const tessera::Status s = tessera::validate({1.0f, bad, 0, 0});
    CHECK(s.code() == tessera::StatusCode::invalid_argument);
    CHECK(s.message().find("--top-p") != std::string::npos);
  }
  const tessera::Status k = tessera::validate({1.0f, 0.9f, -3, 0});
  CHECK(k.message().find("--top-k") != std::string::npos);
  CHECK(k.message().find("got -3") != std::string::npos);
}

TEST_CASE("sampler handles a one-token vocabulary and masked (-inf) logits") {
  Sampler s({1.0f, 0.9f, 0, 7});
  std::vector<float> one = {0.3f};
  CHECK(s.sample(one) == 0);
  Sampler k({1.0f, 0.5f, 3, 7});
  for (int i = 0; i < 50; ++i) {
    std::vector<float> masked = {-INFINITY, 1.0f, -INFINITY, 0.5f, -INFINITY};
    const int32_t t = k.sample(masked);
    CHECK((t == 1 || t == 3));
  }
}
