// The zoo's quantized llamas against llama.cpp's logits on the CPU
// (tests/support/zoo_quant_reference.h; Vulkan: tests/vulkan/zoo_quant_vulkan_test.cpp).
#include "support/zoo_quant_reference.h"

using namespace tessera::testing;

TEST_CASE("zoo quantized llamas match llama.cpp's logits row by row on the CPU (default passes and none)") {
  for (const auto& z : kZooQuantFiles)
    for (const char* passes : {"default", "none"}) check_zoo_file(z, "cpu", passes);
}
