// Whole-model batch invariance on Vulkan with batch_invariant (docs/backends.md,
// "Batch invariance"; the default Vulkan kernels do not promise it): mixed
// steps of several sequences, prompt chunks of 1, 7 or 64 tokens, sequences
// joining and leaving, give every token the same logits, to the bit, as each
// sequence alone fed one token a step. --strict, so every node runs on the device.
#include <doctest/doctest.h>

#include <filesystem>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "support/mixed_steps.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

RunnerOptions vulkan_invariant() {
  register_builtin_backends();
  BackendRegistry::global().load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
  RunnerOptions o;
  o.backend = "vulkan";
  o.strict = true;
  o.batch_invariant = true;
  return o;
}

}  // namespace

TEST_CASE("vulkan: stories260K in mixed steps of chunks of 1, 7 and 64 gives every token the bits it gets alone, with batch_invariant" *
          needs(vulkan_tests())) {
  require_vulkan_device();
  Rng rng(501);
  check_mixed_against_alone(load_shared_model("models/stories260K.bin"), vulkan_invariant(), {1, 7, 64}, rng);
}

TEST_CASE("vulkan: f16, bf16, q8_0 and q4_0 llamas in mixed steps of chunks of 1, 7 and 64 give every token the bits it gets alone, with batch_invariant" *
          needs(vulkan_tests())) {
  require_vulkan_device();
  Rng rng(502);
  for (DType t : {DType::f16, DType::bf16, DType::q8_0, DType::q4_0}) {
    CAPTURE(name(t));
    check_mixed_against_alone(small_llama(t, rng.engine()()), vulkan_invariant(), {1, 7, 64}, rng);
  }
}
