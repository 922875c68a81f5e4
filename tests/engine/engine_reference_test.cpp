// Every greedy reference case in ../shared/reference through the serving
// engine gives run.c's ids: alone, all submitted together with staggered
// arrivals, with prefix caching on and off (and prompts that share cached
// prefixes), with a KV cache so small that sequences are preempted, and with
// prompt chunks of 1, 7 and 64 tokens; on the CPU and on Vulkan.
#include <doctest/doctest.h>

#include "engine/reference_runs.h"

using namespace tessera;
using namespace tessera::testing;


TEST_CASE("engine: every reference case alone gives run.c's ids") {
  run_all({}, [](EngineSetup&) {}, 0, true);
}

TEST_CASE("engine: every case of a file submitted together, arrivals staggered, gives run.c's ids") {
  run_all({}, [](EngineSetup&) {}, 7);
  run_all({}, [](EngineSetup&) {}, 0);
}

TEST_CASE("engine: prefix caching off gives the same ids") {
  run_all({}, [](EngineSetup& s) { s.config.prefix_caching = false; }, 3);
}

TEST_CASE("engine: prompt chunks of 1, 7 and 64 tokens give the same ids") {
  run_all({}, [](EngineSetup& s) { s.config.scheduler.max_prefill_chunk = 1; }, 0);
  run_all({}, [](EngineSetup& s) { s.config.scheduler.max_prefill_chunk = 7; }, 5);
  run_all({}, [](EngineSetup& s) { s.config.scheduler.max_prefill_chunk = 64; }, 0);
}

TEST_CASE("engine: a KV cache too small for every sequence preempts, and every output is still run.c's") {
  int64_t preemptions = 0;
  // Room for 1.5 sequences of the longest case: most steps cannot hold them all.
  run_all({}, [](EngineSetup& s) {
    s.ctx = 256;
    s.kv_blocks = 24;
    s.config.scheduler.max_prefill_chunk = 16;
  }, 0, false, &preemptions);
  CHECK(preemptions > 0);
}

TEST_CASE("engine: prompts that extend cached sequences (prefix hits inside generated text) give the same ids") {
  // A prompt made of a reference sequence's first m ids continues, greedily,
  // exactly as that sequence did; with the first run's blocks cached, most of
  // it is a prefix-cache hit.
  for (const ModelCases& m : kModels) {
    CAPTURE(m.model);
    EngineSetup s;
    s.model = m.model;
    s.tokenizer = m.tokenizer;
    TestEngine t = open_test_engine(s);
    const auto cases = reference_cases(m.file, m.steps, t.model.tokenizer.get());
    check_reference_cases(*t.engine, cases);
    std::vector<ReferenceCase> longer;
    for (const auto& c : cases)
      for (int32_t extra : {1, 17, 40}) {
        const int32_t len = (int32_t)c.prompt.size() + extra;
        if (len + 1 >= (int32_t)c.full_ids.size()) continue;
        ReferenceCase l = c;
        l.prompt.assign(c.full_ids.begin(), c.full_ids.begin() + len);
        l.request.prompt = l.prompt;
        l.request.max_tokens = m.steps - len + 1;
        longer.push_back(std::move(l));
      }
    check_reference_cases(*t.engine, longer);
    const EngineMetrics em = t->metrics();
    CHECK(em.prefix_hit_tokens > 0);
  }
}
