// The serving engine on Vulkan: every greedy reference case, staggered,
// chunked and preempted, gives run.c's ids, with and without speculative
// decoding (tests/engine runs the same on the CPU).
#include <doctest/doctest.h>

#include "engine/reference_runs.h"
#include "engine/speculative_setup.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"

using namespace tessera;
using namespace tessera::testing;

TEST_CASE("vulkan: engine reference cases, staggered, chunked and preempted, give run.c's ids" * needs(vulkan_tests())) {
  run_all_on_backend("vulkan");
}

TEST_CASE("vulkan: speculative decoding (draft, prompt lookup, Jacobi) gives run.c's ids, staggered and preempted" * needs(vulkan_tests())) {
  // stories260K only (lavapipe runs a step a few times slower than the CPU
  // backend; tests/engine runs every reference file with every method).
  for (SpecMethod m : {SpecMethod::draft, SpecMethod::ngram, SpecMethod::jacobi}) {
    CAPTURE(name(m));
    EngineSetup s;
    s.backend = "vulkan";
    s.model = "models/stories260K.bin";
    speculate(s, m, 4);
    if (m == SpecMethod::draft) {  // and preempted, in 7-token chunks
      s.ctx = 256;
      s.kv_blocks = 24;
      s.config.scheduler.max_prefill_chunk = 7;
    }
    TestEngine t = open_test_engine(s);
    check_reference_cases(*t.engine, reference_cases("reference/stories260K.greedy.txt", 200, nullptr), 5);
    CHECK(t->metrics().spec_passes > 0);
    if (m == SpecMethod::draft) CHECK(t->metrics().preemptions > 0);
  }
}
