// Two tensor-parallel ranks as threads (tests/support/two_ranks.h): rank 0's
// steps cross to rank 1 as control messages while their collectives meet in
// the middle of every step, so this suite's ThreadSanitizer run sees both
// threads' traffic. tests/e2e/tensor_parallel_test.cpp holds the split to
// llama.cpp on the whole zoo.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "engine/engine_fixture.h"
#include "support/two_ranks.h"
#include "support/zoo_reference.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// stories260K's serving engine over `ranks`, split by pipeline stage or by tensor.
EngineSetup split_stories(TwoRanks& ranks, bool pipeline) {
  EngineSetup s;
  s.model = "models/stories260K.bin";
  s.adjust_runner = [&ranks, pipeline](RunnerOptions& ro) { ranks.join(ro, pipeline); };
  return s;
}

// The engine's counts once `requests` have finished (it publishes them after the step that finished the last).
EngineMetrics metrics_after(ServingEngine& e, int64_t requests) {
  for (int i = 0; i < 5000 && e.metrics().requests_finished < requests; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return e.metrics();
}

}  // namespace

TEST_CASE("engine: a model split over two ranks (threads) gives run.c's greedy ids, opened twice in a row") {
  TwoRanks ranks;
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 3);
  for (int open = 0; open < 2; ++open) {  // a second runner on the same ranks: close, then open again
    auto m = ranks.open(shared_path("models/stories260K.bin"), 512);
    for (size_t i = 0; i < 3; ++i) {
      const auto& c = cases[i];
      CAPTURE(c.prompt_ids);
      const std::vector<int32_t> prompt = parse_ids(c.prompt_ids);
      const size_t n = std::min<size_t>(c.full_ids.size() - prompt.size(), 64);
      const auto ids = free_running_greedy(*m, prompt, n);
      CHECK(join_ids(ids) == join_ids(std::vector<int32_t>(c.full_ids.begin(), c.full_ids.begin() + (ptrdiff_t)(prompt.size() + n))));
    }
  }
  ranks.leave();
  CHECK_MESSAGE(ranks.follower_status().is_ok(), ranks.follower_status().message());
}

TEST_CASE("engine: the serving engine over two ranks, split by tensor and by pipeline stage, gives run.c's ids for every prompt at once and staggered") {
  for (const bool pipeline : {false, true}) {
    CAPTURE(pipeline);
    TwoRanks ranks;
    const EngineSetup s = split_stories(ranks, pipeline);
    {
      TestEngine e = open_test_engine(s);
      const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
      check_reference_cases(*e.engine, cases);      // every prompt in the first steps: micro-batches of several sequences
      check_reference_cases(*e.engine, cases, 40);  // joining and leaving the batch
    }
    ranks.leave();
    CHECK_MESSAGE(ranks.follower_status().is_ok(), ranks.follower_status().message());
  }
}

// Two independent batches in flight (docs/parallelism.md, "Independent
// batches"): while one batch's step is applied the other's is in the
// stages; with one batch (pipeline_batches = 1) never. The ids are run.c's
// either way, and every KV block comes back.
TEST_CASE("engine: a two-stage pipeline keeps two batches' steps in flight, and gives run.c's ids") {
  for (const int32_t batches : {0, 1}) {
    CAPTURE(batches);
    TwoRanks ranks;
    EngineSetup s = split_stories(ranks, true);
    s.config.pipeline_batches = batches;
    size_t overlapped = 0, steps = 0;
    s.config.after_step = [&](const StepObservation& o) {
      ++steps;
      overlapped += o.steps_in_flight > 0;
    };
    {
      TestEngine e = open_test_engine(s);
      const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
      check_reference_cases(*e.engine, cases);
      check_reference_cases(*e.engine, cases, 25);
      const int64_t requests = 2 * (int64_t)cases.size();
      const EngineMetrics m = metrics_after(*e.engine, requests);
      CHECK(m.requests_finished == requests);
      CHECK(m.kv_blocks_used == 0);
      CHECK(m.running == 0);
    }
    ranks.leave();
    CHECK_MESSAGE(ranks.follower_status().is_ok(), ranks.follower_status().message());
    MESSAGE(steps << " steps, " << overlapped << " applied while another was in flight");
    if (batches == 1) CHECK(overlapped == 0);
    else CHECK(overlapped > steps / 2);
  }
}

// A cancel of a sequence whose step is in flight waits for the step to be
// collected (its blocks are being written); the other requests are not
// disturbed and every block comes back.
TEST_CASE("engine: with two pipeline batches in flight, cancelled requests end and the others still give run.c's ids") {
  TwoRanks ranks;
  const EngineSetup s = split_stories(ranks, true);
  {
    TestEngine e = open_test_engine(s);
    const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
    std::vector<std::shared_ptr<RequestState>> victims;
    for (uint64_t seed : {5, 6, 7}) {
      Request q;
      q.prompt = {1, 461};
      q.max_tokens = 250;
      q.sampling.temperature = 0.9f;
      q.sampling.seed = seed;
      q.ignore_eos = true;
      q.detokenize = false;
      auto h = e->submit(q, Delivery::stream);
      REQUIRE(h.has_value());
      victims.push_back(*h);
    }
    std::thread canceller([&] {
      for (auto& v : victims) {
        TokenOutput ev;
        for (int i = 0; i < 3 && v->next(&ev); ++i) {
        }
        e->cancel(*v);
      }
    });
    check_reference_cases(*e.engine, cases);
    canceller.join();
    for (auto& v : victims) {
      const RequestResult& r = v->wait();
      CHECK(r.sequences[0].finish == FinishReason::cancelled);
      CHECK(r.sequences[0].tokens.size() < 250);
    }
    const int64_t requests = (int64_t)cases.size() + 3;
    const EngineMetrics m = metrics_after(*e.engine, requests);
    CHECK(m.requests_finished == requests);
    CHECK(m.kv_blocks_used == 0);
  }
  ranks.leave();
  CHECK_MESSAGE(ranks.follower_status().is_ok(), ranks.follower_status().message());
}

TEST_CASE("engine: a two-stage pipeline cuts one prompt's prefill into micro-batches of its tokens, and its logits are one process's") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  // The longest reference prompt, whole in one step.
  std::vector<int32_t> prompt;
  for (const auto& c : cases)
    if (parse_ids(c.prompt_ids).size() > prompt.size()) prompt = parse_ids(c.prompt_ids);
  REQUIRE(prompt.size() >= 8);
  ModelOptions one;
  one.path = shared_path("models/stories260K.bin");
  one.max_context = 256;
  auto single = Model::open(one);
  REQUIRE_MESSAGE(single.has_value(), single.status().message());
  auto alone = Session::create(*(*single)->impl().runner, *(*single)->impl().kv);
  REQUIRE(alone.has_value());
  REQUIRE((*alone)->feed(prompt).is_ok());
  const std::vector<float> want((*alone)->logits().begin(), (*alone)->logits().end());

  TwoRanks ranks;
  {
    auto split = ranks.open(shared_path("models/stories260K.bin"), 256, true);
    ModelRunner& runner = *split->impl().runner;
    auto s = Session::create(runner, *split->impl().kv);
    REQUIRE(s.has_value());
    const int64_t before = runner.micro_batches();
    REQUIRE((*s)->feed(prompt).is_ok());
    // One sequence's step, two micro-batches: stage 2 computes the prompt's
    // first half while stage 1 computes its second, which attends to the
    // first half's K/V this stage wrote just before.
    CHECK(runner.micro_batches() - before == 2);
    const auto got = (*s)->logits();
    REQUIRE(got.size() == want.size());
    float scale = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::fabs(want[i]));
      worst = std::max(worst, std::fabs(got[i] - want[i]));
    }
    CHECK(worst <= 1e-4f * scale);
    // A step of fewer tokens than two micro-batches' fewest (16 here: the CPU's
    // roofs are measured, so the floor) runs whole: cut, each piece would read
    // the stage's weights again for the same work.
    const int64_t at = runner.micro_batches();
    REQUIRE((*s)->feed(std::vector<int32_t>(prompt.begin(), prompt.begin() + 5)).is_ok());
    CHECK(runner.micro_batches() - at == 1);
    // And decoding on from there gives run.c's ids.
    for (const auto& c : cases) {
      if (parse_ids(c.prompt_ids) != prompt) continue;
      const auto ids = free_running_greedy(*split, prompt, 40);
      CHECK(join_ids(ids) == join_ids(std::vector<int32_t>(c.full_ids.begin(), c.full_ids.begin() + (ptrdiff_t)ids.size())));
    }
  }
  ranks.leave();
  CHECK_MESSAGE(ranks.follower_status().is_ok(), ranks.follower_status().message());
}
