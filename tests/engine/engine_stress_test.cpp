// A randomized stress test of the engine (seed printed): requests submitted,
// cancelled and finished in random order from several threads, with the KV
// block accounting checked after every step (every block is free, cached or
// held by exactly the sequences whose tables name it; no sequence the
// scheduler has let go still holds blocks), and at the end no block leaked.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "engine/engine_fixture.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

TEST_CASE("engine: random submit / cancel / finish from 4 threads keeps the block accounting exact and leaks nothing") {
  const uint64_t seed = std::random_device{}();
  MESSAGE("seed " << seed);
  std::mutex mu;
  std::vector<std::string> violations;
  std::atomic<int64_t> steps{0};
  EngineSetup s;
  s.model = "models/stories260K.bin";
  s.ctx = 256;
  s.kv_blocks = 40;  // small: preemption and prefix-cache eviction both happen
  s.config.scheduler.max_num_seqs = 12;
  s.config.scheduler.max_num_batched_tokens = 64;
  s.config.scheduler.max_prefill_chunk = 13;
  s.config.after_step = [&](const StepObservation& o) {
    ++steps;
    Status st = o.blocks.check_invariants();
    if (st.is_ok() && o.prefix) st = o.prefix->check_invariants();
    std::string why = st.is_ok() ? "" : st.message();
    if (why.empty() && o.blocks.num_sequences() != o.sequences_holding_blocks)
      why = "block manager holds " + std::to_string(o.blocks.num_sequences()) + " sequences; the engine " +
            std::to_string(o.sequences_holding_blocks);
    if (!why.empty()) {
      std::lock_guard l(mu);
      if (violations.size() < 5) violations.push_back(why);
    }
  };
  TestEngine t = open_test_engine(s);
  const int32_t vocab = t.model.weights->config.vocab_size;

  // Prompts from a few shared stems, so that prefixes collide in the cache.
  std::vector<std::vector<int32_t>> stems;
  {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 4; ++i) {
      std::vector<int32_t> stem{1};
      for (int k = 0; k < 40; ++k) stem.push_back(2 + (int32_t)(rng() % (uint64_t)(vocab - 2)));
      stems.push_back(stem);
    }
  }
  auto worker = [&](uint64_t wseed) {
    std::mt19937_64 rng(wseed);
    std::vector<std::shared_ptr<RequestState>> mine;
    for (int i = 0; i < 30; ++i) {
      Request q;
      const auto& stem = stems[rng() % stems.size()];
      q.prompt.assign(stem.begin(), stem.begin() + 1 + (ptrdiff_t)(rng() % stem.size()));
      for (int k = (int)(rng() % 20); k > 0; --k) q.prompt.push_back(2 + (int32_t)(rng() % (uint64_t)(vocab - 2)));
      q.max_tokens = 1 + (int32_t)(rng() % 80);
      q.sampling.temperature = (rng() % 2) ? 0.0f : 0.8f;
      q.sampling.seed = rng();
      q.n = 1 + (int32_t)(rng() % 3);
      q.ignore_eos = true;
      q.detokenize = false;
      q.stop_token_ids = {(int32_t)(rng() % (uint64_t)vocab)};
      auto h = t->submit(q, (rng() % 2) ? Delivery::stream : Delivery::result);
      REQUIRE_MESSAGE(h.has_value(), h.status().message());
      mine.push_back(*h);
      const uint64_t action = rng() % 4;
      if (action == 0) t->cancel(*mine[rng() % mine.size()]);
      if (action == 1) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      if (action == 2) {
        TokenOutput ev;
        (void)mine.back()->next(&ev);  // stream: the first event; result-only: returns when done
      }
    }
    for (auto& h : mine) {
      const RequestResult& r = h->wait();
      for (const auto& sq : r.sequences) CHECK(sq.finish != FinishReason::error);
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) threads.emplace_back(worker, seed + 101 * (uint64_t)(w + 1));
  for (auto& th : threads) th.join();
  // One more step so that the last cancellations are applied.
  Request last;
  last.prompt = {1, 2};
  last.max_tokens = 1;
  last.detokenize = false;
  REQUIRE(t->submit(last).has_value());
  while (t->metrics().requests_finished < 121) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::lock_guard l(mu);
    for (const auto& v : violations) FAIL_CHECK(v);
  }
  const EngineMetrics m = t->metrics();
  MESSAGE("steps " << steps.load() << ", preemptions " << m.preemptions << ", prefix hits " << m.prefix_hit_tokens << " tokens, evictions "
                   << m.prefix_evictions);
  CHECK(m.kv_blocks_used == 0);
  CHECK(m.running == 0);
  CHECK(m.waiting == 0);
  CHECK(m.kv_blocks_used + m.kv_blocks_cached <= m.kv_blocks_total);
}
