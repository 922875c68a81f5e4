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

TEST_CASE("cuda: engine reference cases, staggered, chunked and preempted, give run.c's ids" * needs(cuda_gpu())) {
  run_all_on_backend("cuda");
}

TEST_CASE("rocm: engine reference cases, staggered, chunked and preempted, give run.c's ids" * needs(rocm_gpu())) {
  run_all_on_backend("rocm");
}
