// The slo scheduling policy against what docs/serving.md says it does: the
// step-cost line it fits, the queue order (resumed, on time, late), the
// admission cap that keeps the decode step within the TPOT target, and the
// token cap on prompt chunks. Times are given to schedule(), so nothing here
// depends on how fast the machine is.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/serving/scheduler.h"
#include "engine/serving/step_cost.h"
#include "support/random.h"

using tessera::BlockManager;
using tessera::SchedulePolicy;
using tessera::Scheduler;
using tessera::SchedulerConfig;
using tessera::SchedulerOutput;
using tessera::Sequence;
using tessera::StepCostModel;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<Sequence> prompt_seq(tessera::SeqId id, int32_t len, Clock::time_point arrival) {
  auto s = std::make_unique<Sequence>(id, tessera::SamplerParams{});
  s->tokens.assign((size_t)len, 7);
  s->prompt_len = len;
  s->arrival = arrival;
  return s;
}

// Teaches the scheduler a step cost of a + b * tokens.
void teach(Scheduler& s, double a, double b) {
  for (int32_t n : {1, 8, 32, 64, 128, 4, 16})
    s.observe_step(n, a + b * n);
}

bool scheduled(const SchedulerOutput& out, const Sequence* s) {
  for (const auto& e : out.seqs)
    if (e.seq == s) return true;
  return false;
}

}  // namespace

TEST_CASE("the step-cost line fits a + b * tokens from noisy steps and forgets old ones") {
  tessera::testing::Rng rng(41);
  const double a = rng.uniform(5, 50), b = rng.uniform(0.1f, 3);
  StepCostModel m;
  CHECK_FALSE(m.ready());
  for (int i = 0; i < 200; ++i) {
    const int32_t n = rng.integer(1, 256);
    m.observe(n, a + b * n + rng.uniform(-0.5f, 0.5f));
  }
  REQUIRE(m.ready());
  CHECK(m.fixed_ms() == doctest::Approx(a).epsilon(0.05));
  CHECK(m.per_token_ms() == doctest::Approx(b).epsilon(0.05));
  CHECK(m.tokens_within(a + b * 100) == doctest::Approx(100).epsilon(0.05));
  CHECK(m.tokens_within(a * 0.5) == 0);
  // The machine slows down: the line follows within a few dozen steps.
  for (int i = 0; i < 150; ++i) {
    const int32_t n = rng.integer(1, 256);
    m.observe(n, 2 * (a + b * n));
  }
  CHECK(m.predict_ms(128) == doctest::Approx(2 * (a + b * 128)).epsilon(0.05));
}

TEST_CASE("slo: a request that can still meet its TTFT target goes before one that cannot, and before it in the queue") {
  BlockManager blocks({256, 16});
  SchedulerConfig c;
  c.max_num_seqs = 1;  // one admission per step shows the order
  c.max_num_batched_tokens = 256;
  c.policy = SchedulePolicy::slo;
  c.slo_ttft_ms = 1000;
  c.slo_tpot_ms = 100;
  Scheduler s(c, blocks, nullptr);
  teach(s, 20, 1);  // 64 tokens: 84 ms
  const auto now = Clock::now();
  auto late = prompt_seq(1, 64, now - std::chrono::milliseconds(5000));    // waited 5 s: hopeless
  auto fresh = prompt_seq(2, 64, now - std::chrono::milliseconds(100));    // 100 + 84 ms: on time
  s.add(late.get());
  s.add(fresh.get());
  SchedulerOutput out;
  REQUIRE(s.schedule(&out, now).is_ok());
  CHECK(scheduled(out, fresh.get()));
  CHECK_FALSE(scheduled(out, late.get()));

  // The same queue under fcfs: the oldest first.
  BlockManager blocks2({256, 16});
  c.policy = SchedulePolicy::fcfs;
  Scheduler f(c, blocks2, nullptr);
  teach(f, 20, 1);
  auto late2 = prompt_seq(1, 64, now - std::chrono::milliseconds(5000));
  auto fresh2 = prompt_seq(2, 64, now - std::chrono::milliseconds(100));
  f.add(late2.get());
  f.add(fresh2.get());
  REQUIRE(f.schedule(&out, now).is_ok());
  CHECK(scheduled(out, late2.get()));
}

TEST_CASE("slo: a late request still runs once no request that can make its target waits") {
  BlockManager blocks({256, 16});
  SchedulerConfig c;
  c.max_num_seqs = 4;
  c.policy = SchedulePolicy::slo;
  c.slo_ttft_ms = 500;
  c.slo_tpot_ms = 1000;
  Scheduler s(c, blocks, nullptr);
  teach(s, 20, 1);
  const auto now = Clock::now();
  auto late = prompt_seq(1, 32, now - std::chrono::seconds(10));
  s.add(late.get());
  SchedulerOutput out;
  REQUIRE(s.schedule(&out, now).is_ok());
  CHECK(scheduled(out, late.get()));
}

TEST_CASE("slo: admission stops where one more sequence would take the decode step past the TPOT target") {
  BlockManager blocks({1024, 16});
  SchedulerConfig c;
  c.max_num_seqs = 64;
  c.max_num_batched_tokens = 1024;
  c.policy = SchedulePolicy::slo;
  c.slo_ttft_ms = 1e6;
  c.slo_tpot_ms = 80;  // planned to 0.75 of it: 20 + 5 n <= 60, at most 8 decoding sequences
  Scheduler s(c, blocks, nullptr);
  teach(s, 20, 5);
  const auto now = Clock::now();
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 20; ++i) {
    seqs.push_back(prompt_seq(i + 1, 1, now));  // one-token prompts: every admitted sequence decodes at once
    s.add(seqs.back().get());
  }
  SchedulerOutput out;
  REQUIRE(s.schedule(&out, now).is_ok());
  s.complete(out);
  CHECK(s.num_running() == 8);
  CHECK(s.num_waiting() == 12);
  // Under fcfs the same queue fills max_num_seqs.
  BlockManager blocks2({1024, 16});
  c.policy = SchedulePolicy::fcfs;
  Scheduler f(c, blocks2, nullptr);
  std::vector<std::unique_ptr<Sequence>> seqs2;
  for (int i = 0; i < 20; ++i) {
    seqs2.push_back(prompt_seq(i + 1, 1, now));
    f.add(seqs2.back().get());
  }
  REQUIRE(f.schedule(&out, now).is_ok());
  CHECK(f.num_running() == 20);
}

TEST_CASE("slo: with sequences decoding, a step's prompt tokens are capped at what fits the TPOT target") {
  BlockManager blocks({1024, 16});
  SchedulerConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 512;
  c.policy = SchedulePolicy::slo;
  c.slo_ttft_ms = 1e6;
  c.slo_tpot_ms = 160;  // planned to 0.75 of it: 20 + 1 n <= 120, 100 tokens a step
  Scheduler s(c, blocks, nullptr);
  teach(s, 20, 1);
  const auto now = Clock::now();
  auto a = prompt_seq(1, 1, now);
  s.add(a.get());
  SchedulerOutput out;
  REQUIRE(s.schedule(&out, now).is_ok());
  s.complete(out);
  a->tokens.push_back(9);  // its first token: it decodes from now on
  auto big = prompt_seq(2, 400, now);
  s.add(big.get());
  REQUIRE(s.schedule(&out, now).is_ok());
  CHECK(out.n_tokens >= 98);  // the fitted line is a least-squares estimate: 100 within rounding
  CHECK(out.n_tokens <= 100);
  CHECK(scheduled(out, a.get()));
  CHECK(scheduled(out, big.get()));
}

TEST_CASE("--schedule names fcfs or slo, and slo needs both targets") {
  CHECK(tessera::parse_schedule_policy("fcfs").value() == SchedulePolicy::fcfs);
  CHECK(tessera::parse_schedule_policy("slo").value() == SchedulePolicy::slo);
  const auto bad = tessera::parse_schedule_policy("lifo");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.status().message().find("--schedule") != std::string::npos);
}
