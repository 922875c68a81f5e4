// Plans are cached per shape bucket of (tokens, context): a sequence that
// grows past a context bucket gets the next one's plan, compiled once, whose
// block tables and attention scratch are sized for that context; the ids
// are the reference's inside the first bucket and the same with one bucket
// for the whole context beyond it.
#include <doctest/doctest.h>

#include <memory>

#include "engine/models/load_model.h"
#include "engine/runtime/session.h"
#include "support/reference_cases.h"

using namespace tessera;

namespace {

std::vector<int32_t> greedy(RunnerWithCache& rc, const std::vector<int32_t>& prompt, int32_t steps) {
  auto s = Session::create(*rc.runner, *rc.kv);
  REQUIRE(s.has_value());
  GenerateOptions o;
  o.steps = steps;
  o.sampler.temperature = 0.0f;
  o.stop_at_bos = false;
  auto r = generate(**s, prompt, o);
  REQUIRE_MESSAGE(r.has_value(), r.status().message());
  return r->ids;
}

uint64_t block_table_bytes(const Plan& p) {
  for (const PlanBuffer& b : p.buffers)
    if (b.field == StepField::block_tables) return b.bytes;
  return 0;
}

}  // namespace

TEST_CASE("context buckets: 256 then 512 positions, each compiled once, sized for its context, same ids as one bucket") {
  auto w = load_model(TESSERA_SHARED_DIR "/models/stories260K.bin");
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  auto weights = std::make_shared<const ModelWeights>(std::move(*w));
  RunnerOptions o;
  o.max_context = 512;
  auto bucketed = open_runner(weights, o);
  REQUIRE_MESSAGE(bucketed.has_value(), bucketed.status().message());
  o.min_context_bucket = 512;
  auto single = open_runner(weights, o);
  REQUIRE(single.has_value());

  const auto cases = testing::read_id_cases(TESSERA_SHARED_DIR "/reference/stories260K.greedy.txt");
  REQUIRE(cases.size() >= 5);
  const auto& c = cases[4];
  const std::vector<int32_t> ids = greedy(*bucketed, testing::parse_ids(c.prompt_ids), 480);
  // Inside the first bucket: run.c's ids.
  REQUIRE(ids.size() >= c.full_ids.size());
  CHECK(std::vector<int32_t>(ids.begin(), ids.begin() + (ptrdiff_t)c.full_ids.size()) == c.full_ids);
  // Past it (positions 256..479 ran on the 512 plan): the same as with one bucket.
  CHECK(ids == greedy(*single, testing::parse_ids(c.prompt_ids), 480));

  // Every bucket was compiled when the cache was attached (warm-up): tokens
  // 1, 2, 4 ... 256 at contexts 256 and 512; none later.
  ModelRunner& r = *bucketed->runner;
  const auto buckets = r.compiled_buckets();
  const auto has = [&](int32_t t, int32_t ctx) { return std::find(buckets.begin(), buckets.end(), std::pair{t, ctx}) != buckets.end(); };
  CHECK(buckets.size() == 9 * 2);
  for (int32_t t = 1; t <= 256; t *= 2) {
    CHECK(has(t, 256));
    CHECK(has(t, 512));
  }
  CHECK(single->runner->compiled_buckets().size() == 9);
  auto short_plan = r.plan_for(1, 100);
  auto long_plan = r.plan_for(1, 300);
  REQUIRE(short_plan.has_value());
  REQUIRE(long_plan.has_value());
  CHECK(block_table_bytes(**short_plan) == 256 / 16 * 4);
  CHECK(block_table_bytes(**long_plan) == 512 / 16 * 4);
  CHECK(r.compiled_buckets().size() == buckets.size());  // replayed, not recompiled
  CHECK(r.plan_for(1, 513).status().message().find("reaches 513 positions; the runner holds 1 to 512") != std::string::npos);
  // One arena per part, shared by all 18 buckets: the largest bucket's, not their sum.
  uint64_t largest = 0;
  for (const auto& [t, ctx] : buckets) largest = std::max(largest, (*r.plan_for(t, ctx))->arena_peak_bytes);
  CHECK(r.arena_bytes() >= largest);
  CHECK(r.arena_bytes() < largest + 4096);
}
