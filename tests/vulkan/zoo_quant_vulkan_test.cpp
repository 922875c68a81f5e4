// The zoo's quantized llamas against llama.cpp's logits on Vulkan (lavapipe
// in CI): every block type's shaders in a whole model (tests/support/zoo_reference.h).
#include "support/requirements.h"
#include "support/vulkan_device.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

TEST_CASE("vulkan: zoo quantized llamas match llama.cpp's logits row by row (default passes and none)" * needs(vulkan_tests())) {
  require_vulkan_device();
  for (const auto& z : kZooQuantFiles)
    for (const char* passes : {"default", "none"}) check_zoo_file(z, "vulkan", passes);
}
