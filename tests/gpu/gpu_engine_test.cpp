// The serving engine on the CUDA and ROCm backends: every greedy reference
// case, staggered (continuous batching: steps of several sequences, padded
// to their bucket and replayed as graphs), chunked and preempted, gives
// run.c's ids, as tests/engine checks on the CPU and tests/vulkan on Vulkan.
// Without a GPU they are reported Skipped.
#include <doctest/doctest.h>

#include "engine/reference_runs.h"
#include "gpu/gpu_requirements.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

void check_engine(const std::string& backend) {
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

}  // namespace

TEST_CASE("cuda: engine reference cases, staggered, chunked and preempted, give run.c's ids" * needs(cuda_gpu())) {
  check_engine("cuda");
}

TEST_CASE("rocm: engine reference cases, staggered, chunked and preempted, give run.c's ids" * needs(rocm_gpu())) {
  check_engine("rocm");
}
