// The serving engine on Vulkan: every greedy reference case, staggered,
// chunked and preempted, gives run.c's ids (tests/engine runs the same on the CPU).
#include <doctest/doctest.h>

#include "engine/reference_runs.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"

using namespace tessera;
using namespace tessera::testing;

TEST_CASE("vulkan: engine reference cases, staggered, chunked and preempted, give run.c's ids" * needs(vulkan_tests())) {
  run_all_on_backend("vulkan");
}
