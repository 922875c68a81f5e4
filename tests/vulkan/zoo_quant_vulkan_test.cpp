// The zoo's quantized llamas against llama.cpp's logits on Vulkan (lavapipe
// in CI): every block type's shaders in a whole model (tests/support/zoo_quant_reference.h).
#include <filesystem>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"
#include "support/zoo_quant_reference.h"

using namespace tessera::testing;

// Every file with the default passes; with --passes none only the Q4_K_M
// mix: lavapipe compiles each (shader, weight type, shape bucket) pipeline
// on the CPU, seconds apiece, and the unfused graph's pipelines are the
// same shaders over the same types (the CPU suite runs every file both ways).
TEST_CASE("vulkan: zoo quantized llamas match llama.cpp's logits row by row (default passes, and none for the Q4_K_M mix)" *
          needs(vulkan_tests())) {
  require_vulkan_device();
  tessera::register_builtin_backends();
  tessera::BackendRegistry::global().load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
  for (const auto& z : kZooQuantFiles) {
    check_zoo_file(z, "vulkan", "default");
    if (std::string(z.file) == "q-llama-Q4_K_M") check_zoo_file(z, "vulkan", "none");
  }
}
