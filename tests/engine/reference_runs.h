#pragma once
// The greedy reference files run through the engine under a configuration:
// shared by the CPU suite (tests/engine) and the Vulkan suite (tests/vulkan).
#include "engine/engine_fixture.h"

namespace tessera::testing {

struct ModelCases {
  const char* model;
  const char* tokenizer;
  const char* file;
  int32_t steps;
};

inline const ModelCases kModels[] = {
    {"models/stories260K.bin", "", "reference/stories260K.greedy.txt", 200},
    {"models/aidreams260K.bin", "models/aidreams260K.tok512.bin", "reference/aidreams260K.greedy.tsv", 128},
    {"models/llama-2-tiny-random.gguf", "", "reference/llama-2-tiny-random.greedy.tsv", 64},
};

inline void run_all(EngineSetup base, void (*configure)(EngineSetup&), int64_t stagger, bool one_at_a_time = false,
             int64_t* preemptions = nullptr) {
  for (const ModelCases& m : kModels) {
    CAPTURE(m.model);
    EngineSetup s = base;
    s.model = m.model;
    s.tokenizer = m.tokenizer;
    configure(s);
    TestEngine t = open_test_engine(s);
    const auto cases = reference_cases(m.file, m.steps, t.model.tokenizer.get());
    if (one_at_a_time) {
      for (const auto& c : cases) check_reference_cases(*t.engine, {c});
    } else {
      check_reference_cases(*t.engine, cases, stagger);
    }
    if (preemptions) *preemptions += t->metrics().preemptions;
  }
}

// The engine on another backend's device: every reference case staggered,
// then again chunked 7 tokens at a time with a pool small enough to preempt.
inline void run_all_on_backend(const std::string& backend) {
  EngineSetup base;
  base.backend = backend;
  run_all(base, [](EngineSetup&) {}, 5);
  int64_t preemptions = 0;
  run_all(base, [](EngineSetup& s) {
    s.ctx = 256;
    s.kv_blocks = 24;
    s.config.scheduler.max_prefill_chunk = 7;
  }, 0, false, &preemptions);
  CHECK(preemptions > 0);
}

}  // namespace tessera::testing
