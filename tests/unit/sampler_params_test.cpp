// The request's sampling parameters (logit bias, repetition, presence and
// frequency penalties, min-p) against references written here from their
// definitions: the adjusted logits from the whole token history, the kept
// set from sorting in the test, draws against the softmax in double; and
// the log-probabilities against a log-softmax in long double.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"
#include "sampling_oracle.h"
#include "support/allocation_count.h"
#include "support/random.h"

using tessera::Sampler;
using tessera::SamplerParams;
using tessera::TokenLogprob;
using namespace tessera::testing;

namespace {

int32_t first_argmax(const std::vector<float>& x) {
  return (int32_t)(std::max_element(x.begin(), x.end()) - x.begin());
}

// Random request parameters with every adjustment on.
SamplerParams random_adjustments(Rng& rng, int32_t vocab) {
  SamplerParams p;
  p.presence_penalty = rng.uniform(-2, 2);
  p.frequency_penalty = rng.uniform(-2, 2);
  p.repetition_penalty = rng.uniform(0.5f, 2.0f);
  std::vector<int32_t> ids((size_t)vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng.engine());
  for (int i = 0; i < std::min(vocab, 20); ++i) p.logit_bias.push_back({ids[(size_t)i], rng.uniform(-100, 100)});
  return p;
}

std::vector<int32_t> random_tokens(Rng& rng, size_t n, int32_t below) {
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = rng.integer(0, below - 1);
  return t;
}

// Logits whose sorted softmax at `temperature` has no two neighbours, no two
// neighbouring cumulative sums and no two neighbouring ratios to the top
// closer than `gap`, so a threshold halfway between cannot be moved by rounding.
std::vector<float> well_separated_logits(Rng& rng, size_t n, double temperature, double gap) {
  for (;;) {
    std::vector<float> logits = rng.floats(n, -2.5f, 2.5f);
    std::vector<float> sorted = logits;
    std::sort(sorted.rbegin(), sorted.rend());
    bool ok = true;
    for (size_t i = 1; i < n; ++i) ok = ok && (sorted[i - 1] - sorted[i]) / temperature > gap;
    if (ok) return logits;
  }
}

std::vector<int> order_by_logit(const std::vector<float>& logits) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[(size_t)a] > logits[(size_t)b]; });
  return order;
}

long double reference_log_sum_exp(std::span<const float> logits) {
  long double max = -INFINITY;
  for (float l : logits) max = std::max<long double>(max, l);
  long double sum = 0;
  for (float l : logits) sum += std::exp((long double)l - max);
  return max + std::log(sum);
}

}  // namespace

TEST_CASE("logit bias, repetition, presence and frequency penalties give exactly the logits their definitions give") {
  Rng rng(201);
  for (int trial = 0; trial < 20; ++trial) {
    const int32_t vocab = rng.integer(50, 3000);
    SamplerParams p = random_adjustments(rng, vocab);
    if (trial % 4 == 1) p.repetition_penalty = 1.0f;
    if (trial % 4 == 2) p.presence_penalty = p.frequency_penalty = 0.0f;
    if (trial % 4 == 3) p.logit_bias.clear();
    CAPTURE(trial);
    // Repeats are likely: the history draws from a small part of the vocabulary.
    const std::vector<int32_t> prompt = random_tokens(rng, (size_t)rng.integer(0, 300), std::min(vocab, 200));
    const std::vector<int32_t> generated = random_tokens(rng, (size_t)rng.integer(0, 400), std::min(vocab, 300));
    Sampler s(p);
    s.set_prompt(prompt);
    for (int32_t t : generated) s.accept(t);

    const std::vector<float> logits = rng.floats((size_t)vocab, -8, 8);
    const std::vector<float> expected = reference_adjusted(logits, p, prompt, generated);
    std::vector<float> adjusted = logits;
    s.adjust(adjusted);
    int wrong = 0;
    for (size_t i = 0; i < adjusted.size(); ++i) {
      if (adjusted[i] != expected[i] && ++wrong <= 5)
        MESSAGE("token " << i << ": " << adjusted[i] << ", expected " << expected[i]);
    }
    CHECK(wrong == 0);

    // Greedy is the first argmax of the adjusted logits; the caller's logits stay as they were.
    p.temperature = 0.0f;
    Sampler greedy(p);
    greedy.set_prompt(prompt);
    for (int32_t t : generated) greedy.accept(t);
    std::vector<float> w = logits;
    CHECK(greedy.sample(w) == first_argmax(expected));
    CHECK(w == logits);
  }
}

TEST_CASE("greedy decoding with a logit bias picks the biased token, and ties go to the lower index") {
  Rng rng(202);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<float> logits = rng.floats((size_t)rng.integer(2, 5000), -5, 5);
    const int32_t target = rng.integer(0, (int32_t)logits.size() - 1);
    SamplerParams p{.temperature = 0.0f};
    p.logit_bias = {{target, 100.0f}};
    Sampler s(p);
    CHECK(s.sample(logits) == target);

    // Banning the argmax leaves the runner-up.
    const int32_t top = first_argmax(logits);
    std::vector<float> without = logits;
    without[(size_t)top] = -INFINITY;
    p.logit_bias = {{top, -100.0f}};
    Sampler ban(p);
    CHECK(ban.sample(logits) == first_argmax(without));
  }
  // 0.5 + 0.5 ties with token 5's 1.0: the lower index wins.
  std::vector<float> logits = {0, 0, 0.5f, 0, 0, 1.0f, 0};
  SamplerParams p{.temperature = 0.0f};
  p.logit_bias = {{2, 0.5f}};
  CHECK(Sampler(p).sample(logits) == 2);
}

TEST_CASE("the repetition penalty reaches prompt tokens and generated ones, presence and frequency only generated ones") {
  const std::vector<float> logits = {2.0f, -2.0f, 2.0f, -2.0f, 2.0f, 0.0f};
  SamplerParams p;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p);
  const std::vector<int32_t> prompt = {0, 1, 0};
  s.set_prompt(prompt);
  for (int32_t t : {2, 3, 3, 0}) s.accept(t);
  std::vector<float> w = logits;
  s.adjust(w);
  // 0: prompt and generated once: 2 / 2 - (0.5 + 0.25); 1: prompt only: -2 * 2;
  // 2: generated once: 2 / 2 - 0.75; 3: twice: -2 * 2 - (0.5 + 0.5); 4, 5: untouched.
  CHECK(w == std::vector<float>{0.25f, -4.0f, 0.25f, -5.0f, 2.0f, 0.0f});
}

TEST_CASE("top-k, top-p and min-p keep exactly the expected tokens and draws follow their renormalized softmax") {
  Rng rng(203);
  const size_t n = 16;
  const int draws = 40000;
  for (int trial = 0; trial < 12; ++trial) {
    const double temperature = trial % 2 ? 0.7 : 1.0;
    const std::vector<float> logits = well_separated_logits(rng, n, temperature, 0.05);
    const std::vector<int> order = order_by_logit(logits);
    const std::vector<double> p = softmax_double(logits, temperature);

    // Sizes of what each stage alone would keep; n means off.
    const size_t k = trial % 3 == 0 ? n : (size_t)rng.integer(2, (int)n - 1);
    const size_t nucleus = trial % 4 == 1 ? k : (size_t)rng.integer(1, (int)k);
    const size_t min_p_size = trial % 4 == 2 ? n : (size_t)rng.integer(1, (int)n - 1);

    SamplerParams params{.temperature = (float)temperature, .top_p = 1.0f, .top_k = k < n ? (int32_t)k : 0,
                         .seed = seed_for(rng)};
    // top_p halfway between the cumulative sums (within the top k,
    // renormalized) that end the nucleus at `nucleus` tokens.
    if (nucleus < k) {
      double mass = 0, cum = 0;
      for (size_t j = 0; j < k; ++j) mass += p[(size_t)order[j]];
      std::vector<double> cums;
      for (size_t j = 0; j < k; ++j) cums.push_back(cum += p[(size_t)order[j]] / mass);
      params.top_p = (float)(nucleus == 1 ? cums[0] / 2 : (cums[nucleus - 2] + cums[nucleus - 1]) / 2);
    }
    // min_p halfway between the ratios to the top that keep `min_p_size` tokens.
    if (min_p_size < n) {
      const double top = p[(size_t)order[0]];
      params.min_p = (float)((p[(size_t)order[min_p_size - 1]] + p[(size_t)order[min_p_size]]) / 2 / top);
    }
    const size_t kept = std::min({k, nucleus, min_p_size});
    CAPTURE(trial);
    CAPTURE(k);
    CAPTURE(nucleus);
    CAPTURE(min_p_size);

    std::vector<float> kept_logits(n, -INFINITY);
    for (size_t j = 0; j < kept; ++j) kept_logits[(size_t)order[j]] = logits[(size_t)order[j]];
    const std::vector<double> expected = softmax_double(kept_logits, temperature);

    Sampler s(params);
    const std::vector<int> counts = draw_counts(s, logits, draws);
    for (size_t j = 0; j < kept; ++j) {
      const size_t t = (size_t)order[j];
      if (expected[t] * draws >= 30) CHECK_MESSAGE(counts[t] > 0, "kept token " << t << " was never drawn");
    }
    // At most 15 degrees of freedom: mean 15, sd 5.5; 80 is p < 1e-9.
    CHECK(chi_square(counts, expected, draws) < 80.0);
  }
}

TEST_CASE("min-p over a large vocabulary never draws a token below min_p times the top probability") {
  Rng rng(204);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<float> logits = rng.floats(5000, -3, 3);
    for (int i = 0; i < 10; ++i) logits[(size_t)rng.integer(0, 4999)] = rng.uniform(3, 6);
    const double temperature = 0.8;
    const std::vector<double> p = softmax_double(logits, temperature);
    const double top = *std::max_element(p.begin(), p.end());
    SamplerParams params{.temperature = (float)temperature, .top_p = trial % 3 == 1 ? 0.95f : 1.0f,
                         .top_k = trial % 3 == 2 ? 200 : 0, .seed = seed_for(rng)};
    params.min_p = trial % 2 ? 0.02f : 0.3f;
    Sampler s(params);
    CAPTURE(trial);
    for (int i = 0; i < 1000; ++i) {
      std::vector<float> w = logits;
      const int32_t t = s.sample(w);
      REQUIRE(p[(size_t)t] >= params.min_p * top * (1 - 1e-5));
    }
  }
}

TEST_CASE("draws with bias and penalties follow the softmax of the adjusted logits") {
  Rng rng(205);
  for (float temperature : {1.0f, 0.6f}) {
    const std::vector<float> logits = rng.floats(10, -1.5f, 1.5f);
    SamplerParams p{.temperature = temperature, .top_p = 1.0f, .top_k = 0, .seed = seed_for(rng)};
    p.logit_bias = {{3, 1.0f}, {7, -0.5f}};
    p.repetition_penalty = 1.3f;
    p.presence_penalty = 0.4f;
    p.frequency_penalty = 0.2f;
    const std::vector<int32_t> prompt = {1, 3, 3, 9};
    const std::vector<int32_t> generated = {2, 2, 2, 9, 5};
    Sampler s(p);
    s.set_prompt(prompt);
    for (int32_t t : generated) s.accept(t);
    const int draws = 100000;
    const std::vector<int> counts = draw_counts(s, logits, draws);
    const std::vector<double> expected = softmax_double(reference_adjusted(logits, p, prompt, generated), temperature);
    CHECK(chi_square(counts, expected, draws) < 60.0);  // 9 degrees of freedom
  }
}

TEST_CASE("two samplers with one seed and history give one stream, and a copied sampler continues identically") {
  Rng rng(206);
  const int32_t vocab = 800;
  SamplerParams p = random_adjustments(rng, vocab);
  p.temperature = 0.9f;
  p.top_k = 50;
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  p.seed = seed_for(rng);
  p.presence_penalty = 0.3f;
  p.frequency_penalty = 0.2f;
  p.repetition_penalty = 1.1f;
  for (auto& [id, bias] : p.logit_bias) bias = std::clamp(bias, -2.0f, 2.0f);
  const std::vector<int32_t> prompt = random_tokens(rng, 30, vocab);
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 150; ++i) rows.push_back(rng.floats((size_t)vocab, -3, 3));

  auto step = [&](Sampler& s, int i) {
    std::vector<float> w = rows[(size_t)i];
    const int32_t t = s.sample(w);
    s.accept(t);
    return t;
  };
  Sampler a(p), b(p);
  a.set_prompt(prompt);
  b.set_prompt(prompt);
  // One that sampled another vocabulary before, then is assigned: its buffers
  // do not carry anything over.
  Sampler assigned(SamplerParams{.seed = 3});
  std::vector<float> other = rng.floats(2000, -1, 1);
  (void)assigned.sample(other);
  std::vector<int32_t> ta, tb, tc, td;
  for (int i = 0; i < 50; ++i) {
    ta.push_back(step(a, i));
    tb.push_back(step(b, i));
  }
  Sampler copy = a;
  assigned = a;
  for (int i = 50; i < 150; ++i) {
    ta.push_back(step(a, i));
    tb.push_back(step(b, i));
    tc.push_back(step(copy, i));
    td.push_back(step(assigned, i));
  }
  CHECK(ta == tb);
  const std::vector<int32_t> continued(ta.begin() + 50, ta.end());
  CHECK(tc == continued);
  CHECK(td == continued);
  // The penalties saw every accepted token: the history counts them.
  CHECK(a.history().generated_count(ta[0]) == (int32_t)std::count(ta.begin(), ta.end(), ta[0]));
}

TEST_CASE("sample allocates nothing after its first call, with every adjustment and truncation on") {
  Rng rng(207);
  const int32_t vocab = 4000;
  const std::vector<float> logits = rng.floats((size_t)vocab, -4, 4);
  for (int32_t top_k : {0, 40}) {
    for (float top_p : {1.0f, 0.9f}) {
      SamplerParams p = random_adjustments(rng, vocab);
      p.top_k = top_k;
      p.top_p = top_p;
      p.min_p = 0.05f;
      p.seed = seed_for(rng);
      Sampler s(p);
      s.set_prompt(random_tokens(rng, 100, vocab));
      for (int32_t t : random_tokens(rng, 100, vocab)) s.accept(t);
      std::vector<float> w = logits;
      CHECK(allocations_of([&] { (void)s.sample(w); }) == 0);
    }
  }
  std::vector<TokenLogprob> top;
  top.reserve(20);
  TokenLogprob chosen;
  CHECK(allocations_of([&] { tessera::compute_logprobs(logits, 7, 20, &chosen, &top); }) == 0);
}

TEST_CASE("logprobs are the log-softmax of the raw logits, and the top ones come sorted") {
  Rng rng(208);
  for (int trial = 0; trial < 30; ++trial) {
    const size_t n = trial < 5 ? (size_t)rng.integer(1, 8) : (size_t)rng.integer(100, 32000);
    std::vector<float> logits = rng.floats(n, -20, 20);
    if (trial % 3 == 0) {
      for (float& l : logits) l += 5000.0f;  // large logits: the maximum must be subtracted
    }
    if (n > 10) {
      for (int i = 0; i < 5; ++i) logits[(size_t)rng.integer(0, (int)n - 1)] = -INFINITY;
      logits[3] = logits[7];  // a tie
    }
    const int32_t chosen = rng.integer(0, (int32_t)n - 1);
    const int32_t top_n = trial < 5 ? rng.integer(0, 10) : rng.integer(0, 20);
    CAPTURE(trial);
    CAPTURE(n);
    CAPTURE(top_n);

    const long double lse = reference_log_sum_exp(logits);
    auto reference = [&](size_t i) { return (long double)logits[i] - lse; };
    TokenLogprob got;
    std::vector<TokenLogprob> top = {{1, 2.0f}};  // replaced, not appended to
    tessera::compute_logprobs(logits, chosen, top_n, &got, &top);
    CHECK(got.token == chosen);
    if (std::isinf(logits[(size_t)chosen])) CHECK(got.logprob == -INFINITY);
    else CHECK(std::fabs((long double)got.logprob - reference((size_t)chosen)) < 1e-5L);

    REQUIRE(top.size() == std::min(n, (size_t)top_n));
    std::vector<bool> listed(n);
    for (size_t j = 0; j < top.size(); ++j) {
      const TokenLogprob& e = top[j];
      REQUIRE((e.token >= 0 && (size_t)e.token < n));
      CHECK_FALSE(listed[(size_t)e.token]);
      listed[(size_t)e.token] = true;
      CHECK(std::fabs((long double)e.logprob - reference((size_t)e.token)) < 1e-5L);
      if (j > 0) {
        const TokenLogprob& prev = top[j - 1];
        CHECK((prev.logprob > e.logprob || (prev.logprob == e.logprob && prev.token < e.token)));
      }
    }
    // Nothing left out is more probable than the least probable listed.
    if (!top.empty() && top.size() < n) {
      const long double least = reference((size_t)top.back().token);
      for (size_t i = 0; i < n; ++i) {
        // (1e-5: two logits a few ulps apart may round to one float logprob, then the lower id is listed.)
        if (!listed[i]) REQUIRE(reference(i) <= least + 1e-5L);
      }
    }
  }
  // Equal logits are listed by lower id.
  std::vector<float> flat(6, 1.0f);
  std::vector<TokenLogprob> top;
  tessera::compute_logprobs(flat, 0, 4, nullptr, &top);
  REQUIRE(top.size() == 4);
  for (int32_t j = 0; j < 4; ++j) {
    CHECK(top[(size_t)j].token == j);
    CHECK(top[(size_t)j].logprob == doctest::Approx(-std::log(6.0)).epsilon(1e-6));
  }
}

TEST_CASE("validate names each bad request field and the value it got") {
  auto message_of = [](const SamplerParams& p) { return tessera::validate(p).message(); };
  auto check_refused = [&](const SamplerParams& p, std::vector<std::string> parts) {
    const tessera::Status s = tessera::validate(p);
    CHECK(s.code() == tessera::StatusCode::invalid_argument);
    for (const std::string& part : parts) CHECK_MESSAGE(s.message().find(part) != std::string::npos, s.message());
  };
  SamplerParams all;
  all.min_p = 0.1f;
  all.presence_penalty = -2.0f;
  all.frequency_penalty = 2.0f;
  all.repetition_penalty = 1.2f;
  all.logit_bias = {{0, -100.0f}, {31999, 100.0f}};
  CHECK(tessera::validate(all).is_ok());
  CHECK(tessera::validate(all, 32000).is_ok());

  for (float bad : {-0.1f, 1.5f, NAN}) {
    SamplerParams p;
    p.min_p = bad;
    check_refused(p, {"min_p: must be in [0, 1]"});
  }
  {
    SamplerParams p;
    p.min_p = 2.0f;
    CHECK(message_of(p) == "min_p: must be in [0, 1], got 2");
  }
  for (float bad : {2.5f, -3.0f, NAN, INFINITY}) {
    SamplerParams p;
    p.presence_penalty = bad;
    check_refused(p, {"presence_penalty: must be in [-2, 2]"});
    SamplerParams q;
    q.frequency_penalty = bad;
    check_refused(q, {"frequency_penalty: must be in [-2, 2]"});
  }
  {
    SamplerParams p;
    p.frequency_penalty = 2.5f;
    CHECK(message_of(p) == "frequency_penalty: must be in [-2, 2], got 2.5");
  }
  for (float bad : {0.0f, -1.0f, INFINITY, NAN}) {
    SamplerParams p;
    p.repetition_penalty = bad;
    check_refused(p, {"repetition_penalty: must be a finite number > 0"});
  }
  {
    SamplerParams p;
    p.logit_bias = {{5, 1.0f}, {-3, 1.0f}};
    CHECK(message_of(p) == "logit_bias: token id -3 is negative");
    p.logit_bias = {{5, 150.0f}};
    CHECK(message_of(p) == "logit_bias: the bias of token id 5 must be in [-100, 100], got 150");
    p.logit_bias = {{5, NAN}};
    check_refused(p, {"logit_bias", "token id 5", "[-100, 100]"});
    p.logit_bias = {{9, 1.0f}, {4, 2.0f}, {9, -1.0f}};
    CHECK(message_of(p) == "logit_bias: token id 9 is given twice");
  }
  {
    SamplerParams p;
    p.logit_bias = {{70000, 1.0f}};
    CHECK(tessera::validate(p).is_ok());  // the vocabulary is not known here
    const tessera::Status s = tessera::validate(p, 32000);
    CHECK(s.code() == tessera::StatusCode::invalid_argument);
    CHECK(s.message() == "logit_bias: token id 70000 is outside the vocabulary [0, 32000)");
    p.logit_bias = {{32000, 1.0f}};
    CHECK_FALSE(tessera::validate(p, 32000).is_ok());
    // The other fields are checked too.
    p.logit_bias.clear();
    p.min_p = -1.0f;
    CHECK(tessera::validate(p, 32000).message().find("min_p") == 0);
  }
}
