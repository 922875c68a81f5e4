// The serving engine on Vulkan: every greedy reference case, staggered,
// chunked and preempted, gives run.c's ids, with and without speculative
// decoding (tests/engine runs the same on the CPU).
#include <doctest/doctest.h>

#include "engine/kv_prefill.h"
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

TEST_CASE("vulkan: a prompt prefilled on Vulkan is handed over after each step, whole, and decodes run.c's ids on the CPU" *
          needs(vulkan_tests())) {
  // Vulkan's steps run later on its queue, so it does not announce each
  // pool as written (DeviceInfo::notifies_kv_writes): the engine hands every
  // pool over once the step is done, and counts it as such.
  EngineSetup sa, sb;
  sa.backend = "vulkan";
  sa.model = sb.model = "models/stories260K.bin";
  sa.kv_type = sb.kv_type = "f32";
  sa.config.scheduler.max_prefill_chunk = 7;
  TestEngine a = open_test_engine(sa);
  TestEngine b = open_test_engine(sb);
  CHECK_FALSE(a->runner().device_info().notifies_kv_writes);
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  for (size_t i = 0; i < 2; ++i) {
    Prefilled p = prefill(*a.engine, cases[i].request);
    REQUIRE(p.handle->wait().sequences[0].finish != FinishReason::error);
    CHECK(p.chunks == (int)(cases[i].prompt.size() + 6) / 7);
    CHECK(p.hand_overs == p.chunks);
    auto h = b->submit_imported(cases[i].request, std::move(p.import));
    REQUIRE_MESSAGE(h.has_value(), h.status().message());
    CHECK(join_ids(full_ids(cases[i], (*h)->wait())) == join_ids(cases[i].full_ids));
  }
  CHECK(a->metrics().kv_exports_during_step == 0);
  CHECK(a->metrics().kv_exports_after_step > 0);
}
