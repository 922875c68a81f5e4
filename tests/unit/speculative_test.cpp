// Speculative decoding's pieces against independent oracles: the sampler's
// distribution() against the frequencies of sample() (chi-squared), the
// acceptance rule's output distribution against the target's (and a wrong
// rule caught by the same test), prompt lookup against a brute-force search,
// and the adaptive k on known acceptance rates. Seeds printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/spec/adaptive_k.h"
#include "engine/spec/ngram_proposer.h"
#include "engine/spec/verify.h"
#include "sampling_oracle.h"
#include "support/chi_square.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

std::vector<SamplerParams> param_sets(Rng& rng) {
  std::vector<SamplerParams> out;
  out.push_back({1.0f, 1.0f, 0, seed_for(rng)});
  out.push_back({0.7f, 1.0f, 5, seed_for(rng)});
  out.push_back({1.3f, 0.8f, 0, seed_for(rng)});
  SamplerParams minp{1.0f, 1.0f, 0, seed_for(rng)};
  minp.min_p = 0.15f;
  out.push_back(minp);
  SamplerParams pen{0.9f, 0.95f, 8, seed_for(rng)};
  pen.presence_penalty = 0.5f;
  pen.frequency_penalty = 0.3f;
  pen.logit_bias = {{3, 1.5f}};
  out.push_back(pen);
  return out;
}

}  // namespace

TEST_CASE("speculative: Sampler::distribution is the distribution sample() draws from, for every truncation") {
  Rng rng(1501);
  const size_t vocab = 14;
  for (const SamplerParams& p : param_sets(rng)) {
    CAPTURE(p.temperature);
    CAPTURE(p.top_k);
    CAPTURE(p.top_p);
    CAPTURE(p.min_p);
    const std::vector<float> logits = rng.floats(vocab, -2.0f, 2.0f);
    Sampler s(p);
    s.set_prompt(std::vector<int32_t>{1, 2});
    s.accept(4);
    s.accept(4);
    std::vector<float> dist(vocab);
    s.distribution(logits, dist);
    double sum = 0;
    for (float v : dist) sum += v;
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    const int draws = 60000;
    const std::vector<int> counts = draw_counts(s, logits, draws);
    int df = 0;
    const double x2 = pooled_chi_square(counts, std::vector<double>(dist.begin(), dist.end()), draws, &df);
    CHECK_MESSAGE(x2 < chi_square_critical(df), "chi2 " << x2 << " with " << df << " degrees of freedom");
  }
  // Temperature 0: one-hot at the (adjusted) argmax.
  SamplerParams greedy{0.0f, 1.0f, 0, 1};
  greedy.logit_bias = {{0, 100.0f}};
  Sampler g(greedy);
  std::vector<float> logits = rng.floats(vocab), dist(vocab);
  g.distribution(logits, dist);
  CHECK(dist[0] == 1.0f);
  CHECK(std::count(dist.begin(), dist.end(), 0.0f) == (ptrdiff_t)vocab - 1);
}

namespace {

// Runs the acceptance rule `draws` times on one row: the proposal drawn from
// q (or fixed, when q is empty) with a stream of its own, the verdict from
// the target's sampler. Returns how often each token came out.
std::vector<int> verified_counts(const SamplerParams& p, const std::vector<float>& logits, const std::vector<float>& q, int32_t fixed,
                                 AcceptRule rule, int draws, Rng& rng) {
  Sampler target(p);
  Sampler draft({1.0f, 1.0f, 0, seed_for(rng)});
  VerifyScratch scratch;
  std::vector<int> counts(logits.size());
  for (int i = 0; i < draws; ++i) {
    VerifyRow row;
    row.logits = logits;
    row.q = q;
    row.proposal = q.empty() ? fixed : draft.draw_weighted(q);
    const RowVerdict v = verify_row(target, row, scratch, rule);
    REQUIRE(v.token >= 0);
    if (v.accepted) REQUIRE(v.token == row.proposal);
    ++counts[(size_t)v.token];
  }
  return counts;
}

}  // namespace

TEST_CASE("speculative: the acceptance rule leaves the target's distribution unchanged, and a wrong rule fails the same test") {
  Rng rng(1502);
  const size_t vocab = 12;
  const int draws = 80000;
  for (const SamplerParams& p : param_sets(rng)) {
    CAPTURE(p.temperature);
    CAPTURE(p.top_k);
    const std::vector<float> logits = rng.floats(vocab, -2.0f, 2.0f);
    std::vector<float> target_dist(vocab);
    Sampler(p).distribution(logits, target_dist);
    const std::vector<double> expected(target_dist.begin(), target_dist.end());
    // A draft that disagrees with the target: softmax of other logits.
    const std::vector<double> qd = softmax_double(rng.floats(vocab, -2.0f, 2.0f), 0.6);
    const std::vector<float> q(qd.begin(), qd.end());
    int df = 0;
    double x2 = pooled_chi_square(verified_counts(p, logits, q, -1, AcceptRule::leviathan, draws, rng), expected, draws, &df);
    CHECK_MESSAGE(x2 < chi_square_critical(df), "sampled draft: chi2 " << x2 << ", " << df << " degrees of freedom");
    // A deterministic proposal (prompt lookup, Jacobi): q one-hot.
    for (int32_t fixed : {0, 7}) {
      x2 = pooled_chi_square(verified_counts(p, logits, {}, fixed, AcceptRule::leviathan, draws, rng), expected, draws, &df);
      CHECK_MESSAGE(x2 < chi_square_critical(df), "fixed proposal " << fixed << ": chi2 " << x2);
    }
    // The wrong rule drifts toward q: the same statistic, far past the critical value.
    x2 = pooled_chi_square(verified_counts(p, logits, q, -1, AcceptRule::resample_target, draws, rng), expected, draws, &df);
    CHECK_MESSAGE(x2 > chi_square_critical(df), "the wrong rule passed: chi2 " << x2 << ", " << df << " degrees of freedom");
  }
}

TEST_CASE("speculative: at temperature 0 a proposal is accepted exactly when it is the target's argmax") {
  Rng rng(1503);
  const std::vector<float> logits = rng.floats(20);
  const int32_t best = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
  Sampler target({0.0f, 1.0f, 0, 1});
  VerifyScratch scratch;
  for (int32_t x = 0; x < 20; ++x) {
    VerifyRow row;
    row.logits = logits;
    row.proposal = x;
    const RowVerdict v = verify_row(target, row, scratch);
    CHECK(v.token == best);
    CHECK(v.accepted == (x == best));
  }
  // The device's greedy token stands for the logits.
  VerifyRow row;
  row.device_token = 5;
  row.proposal = 5;
  CHECK(verify_row(target, row, scratch).accepted);
}

namespace {

std::vector<int32_t> brute_force_lookup(const std::vector<int32_t>& t, int32_t max_n, int32_t k) {
  const int64_t len = (int64_t)t.size();
  for (int64_t n = std::min<int64_t>(max_n, len - 1); n >= 1; --n) {
    // Every match, scored by the tokens it can supply (at most k), then by lateness.
    int64_t best = -1, best_avail = -1;
    for (int64_t j = 0; j + n < len; ++j) {
      bool eq = true;
      for (int64_t i = 0; i < n; ++i) eq = eq && t[(size_t)(j + i)] == t[(size_t)(len - n + i)];
      const int64_t avail = std::min<int64_t>(k, len - j - n);
      if (eq && avail >= best_avail) {
        best = j;
        best_avail = avail;
      }
    }
    if (best >= 0) return std::vector<int32_t>(t.begin() + best + n, t.begin() + best + n + best_avail);
  }
  return {};
}

}  // namespace

TEST_CASE("speculative: prompt lookup proposes what followed the latest match of the longest suffix n-gram with k tokens after it") {
  std::vector<int32_t> out;
  lookup_ngram(std::vector<int32_t>{5, 6, 7, 8, 9, 5, 6, 7}, 3, 4, &out);
  CHECK(out == std::vector<int32_t>{8, 9, 5, 6});
  lookup_ngram(std::vector<int32_t>{1, 2, 3, 4}, 3, 4, &out);
  CHECK(out.empty());
  lookup_ngram(std::vector<int32_t>{9}, 3, 4, &out);
  CHECK(out.empty());
  // A run: the latest match is right before the suffix with one token
  // after it; the earliest has the most.
  lookup_ngram(std::vector<int32_t>{2, 2, 2, 2}, 2, 5, &out);
  CHECK(out == std::vector<int32_t>{2, 2});
  lookup_ngram(std::vector<int32_t>{7, 7, 7, 7, 7, 7, 7}, 2, 3, &out);
  CHECK(out == std::vector<int32_t>{7, 7, 7});
  Rng rng(1504);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int32_t> t((size_t)rng.integer(1, 40));
    for (auto& v : t) v = rng.integer(0, 4);
    const int32_t n = rng.integer(1, 4), k = rng.integer(1, 6);
    lookup_ngram(t, n, k, &out);
    REQUIRE(out == brute_force_lookup(t, n, k));
  }
}

TEST_CASE("speculative: adaptive k proposes the most at full acceptance, turns itself off at none, and probes again") {
  AdaptiveK full(6);
  for (int i = 0; i < 20; ++i) full.observe(full.next(0.05), full.next(0.05));
  CHECK(full.next(0.05) == 6);
  AdaptiveK none(6);
  for (int i = 0; i < 20; ++i) none.observe(std::max(1, none.next(0.05)), 0);
  CHECK(none.acceptance() < 0.05);
  int probes = 0;
  for (int i = 0; i < AdaptiveK::kProbeEvery * 3; ++i) probes += none.next(0.05);
  CHECK(probes == 3);  // one proposal every kProbeEvery steps
  // A costly proposal needs a high acceptance to pay.
  AdaptiveK mid(6);
  for (int i = 0; i < 30; ++i) mid.observe(4, 2);  // a = 2 / 3
  CHECK(mid.next(0.02) > mid.next(0.5));
  AdaptiveK fixed(5, false);
  fixed.observe(5, 0);
  CHECK(fixed.next(10.0) == 5);
  CHECK(AdaptiveK::tokens_per_pass(1.0, 4) == 5.0);
  CHECK(AdaptiveK::tokens_per_pass(0.5, 2) == doctest::Approx(1.75));
}

// A step runs the token bucket its tokens round up to: one sequence's pass
// of 1 + k tokens costs what 1, 2, 4, 4, 8 tokens cost for k = 0..4. At an
// acceptance of 1/2, under a line of 1 + 0.1 per token, the linear model
// takes k = 2 (3 tokens), which runs the 4-token bucket anyway; the padded
// costs take k = 3, the most that bucket holds.
TEST_CASE("speculative: adaptive k weighs the token bucket a pass runs in, not only its tokens") {
  AdaptiveK k(4);
  for (int i = 0; i < 40; ++i) k.observe(2, 1);
  REQUIRE(std::fabs(k.acceptance() - 0.5) < 1e-9);
  auto line = [](int32_t tokens) { return 1.0 + 0.1 * tokens; };
  const int32_t bucket[] = {1, 2, 4, 4, 8};
  std::vector<double> padded;
  for (int32_t j = 0; j <= 4; ++j) padded.push_back(line(bucket[j]) / line(1));
  CHECK(k.next(0.1 / line(1)) == 2);
  CHECK(k.next(padded) == 3);
}
