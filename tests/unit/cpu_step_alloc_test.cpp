// A CPU step allocates nothing (docs/architecture.md): the plans of a real
// model, after the default passes (every fused kernel llama uses) and with
// none, compiled on the CPU device and run through its Stream with the
// global operator new counting. The weights are random bytes of the planned
// sizes: what is counted does not depend on their values. Matmuls here have
// fewer than 64 rows, so oneDNN's sgemm (which allocates its own packing
// buffers, tests/conformance/no_alloc_test.cpp) is not on the path.
#include <doctest/doctest.h>

#include "engine/models/load_model.h"
#include "engine/runtime/model_runner.h"
#include "support/bound_plan.h"
#include "support/counting_new.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// One sequence of n_tokens starting at position `first`, its blocks in order.
StepArrays one_sequence(int32_t n_tokens, int32_t first, const ShapeBucket& bucket) {
  StepArrays s;
  for (int32_t t = 0; t < n_tokens; ++t) {
    s.token_ids.push_back(1 + t);
    s.positions.push_back(first + t);
    s.slot_mapping.push_back(first + t);
  }
  s.query_start = {0, n_tokens};
  s.seq_lens = {first + n_tokens};
  for (int32_t b = 0; b < bucket.max_blocks_per_seq; ++b) s.block_tables.push_back(b);
  s.logit_rows = {n_tokens - 1};
  return s;
}

// Allocations made by the second of two runs of the plan of an n_tokens step.
long step_allocations(const std::string& passes, int32_t n_tokens) {
  auto w = load_model(TESSERA_SHARED_DIR "/models/stories260K.bin");
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  RunnerOptions o;
  o.passes = passes;
  o.max_context = 256;
  auto rc = open_runner(std::make_shared<const ModelWeights>(std::move(*w)), o);
  REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
  auto plan = rc->runner->plan_for(n_tokens);
  REQUIRE_MESSAGE(plan.has_value(), plan.status().message());
  Device& device = rc->runner->device();
  auto stream = device.create_stream();
  REQUIRE(stream.has_value());

  BoundPlan bp = bind_random(device, **stream, **plan, 811);
  auto& exe = bp.exe;
  const StepArrays step = one_sequence(n_tokens, 3, (*plan)->bucket);
  const StepArgs args = step.args();
  Status status;
  const long n = allocations_of([&] {
    status = (*stream)->run(*exe, args);
    if (status.is_ok()) status = (*stream)->synchronize();
  });
  REQUIRE_MESSAGE(status.is_ok(), status.message());
  return n;
}

}  // namespace

TEST_CASE("a CPU decode step and a 16-token prefill step allocate nothing, with the default passes and with none") {
  // The counter sees an allocation (the replacement operator new is the one linked).
  static std::unique_ptr<int> kept;
  CHECK(allocations_of([] { kept = std::make_unique<int>(1); }) == 1);
  for (const char* passes : {"default", "none"}) {
    for (int32_t n_tokens : {1, 16}) {
      CAPTURE(passes);
      CAPTURE(n_tokens);
      CHECK(step_allocations(passes, n_tokens) == 0);
    }
  }
}
