// The model zoo on the Vulkan backend against llama.cpp, with the CPU's
// bounds. Where the backend lacks an op an architecture needs (qwen2's
// bias_add, phi3's packed projections), placement runs those nodes on the
// CPU and says so (Model::placement_notes): the notes are printed and
// checked, so a fallback is shown, never skipped silently, and --strict
// refuses such a file naming the node. A file whose every node the backend
// runs (llama, qwen3's per-head norms, gemma2's window, soft-caps and GeGLU)
// is also run --strict.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

namespace {

// For each architecture's f32 file, the op it needs that the Vulkan backend
// has no shader for ("": none). Other files (the quantized ones) are run and
// their notes shown, whatever their weight types need.
const std::map<std::string, std::string> kVulkanLacks = {
    {"llama-f32", ""}, {"qwen2-f32", "bias_add"}, {"qwen3-f32", ""}, {"gemma2-f32", ""}, {"phi3-f32", "matmul_qkv"}};

std::unique_ptr<tessera::Model> open_vulkan(const ZooFile& z, bool strict) {
  tessera::register_builtin_backends();
  tessera::BackendRegistry::global().load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
  tessera::ModelOptions o;
  o.path = shared_path("models/zoo/" + z.name + ".gguf");
  o.backend = "vulkan";
  o.strict = strict;
  o.max_context = 64;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return std::move(*m);
}

}  // namespace

TEST_CASE("vulkan: every zoo architecture matches llama.cpp, the nodes the backend lacks shown running on the CPU" *
          needs(vulkan_tests())) {
  require_vulkan_device();
  for (const ZooFile& z : zoo_files()) {
    if (is_quant_llama(z)) continue;  // the next case's
    CAPTURE(z.name);
    auto m = open_vulkan(z, false);
    const auto& notes = m->placement_notes();
    std::string shown;
    for (const std::string& n : notes) shown += "\n  " + n;
    MESSAGE(z.name << " on vulkan: " << (notes.empty() ? "every node on the device" : "on the CPU instead:" + shown));
    if (const auto lacks = kVulkanLacks.find(z.name); lacks != kVulkanLacks.end() && lacks->second.empty()) {
      CHECK(notes.empty());
    } else if (lacks != kVulkanLacks.end()) {
      CHECK(!notes.empty());
      CHECK(shown.find("(" + lacks->second + ", ") != std::string::npos);
    }
    check_zoo_file(z, *m, "vulkan", {.greedy_smoke = false});
    if (notes.empty()) {
      auto strict = open_vulkan(z, true);
      check_zoo_file(z, *strict, "vulkan --strict", {.greedy_smoke = false});
    }
  }
}

// The llama in every quantized type, --strict (every block type has its
// shaders), with the default passes; with --passes none only the Q4_K_M mix:
// lavapipe compiles each (shader, weight type, shape bucket) pipeline on the
// CPU, seconds apiece, and the unfused graph's pipelines are the same shaders
// over the same types (the CPU suite runs every file both ways).
TEST_CASE("vulkan: the zoo llama in every quantized type matches llama.cpp's logits row by row (default passes, and none for the Q4_K_M mix)" *
          needs(vulkan_tests())) {
  require_vulkan_device();
  tessera::register_builtin_backends();
  tessera::BackendRegistry::global().load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
  for (const ZooFile& z : zoo_files()) {
    if (!is_quant_llama(z)) continue;
    CAPTURE(z.name);
    for (const std::string passes : {"default", "none"}) {
      if (passes == "none" && z.name != "q-llama-Q4_K_M") continue;
      auto m = open_zoo_model(z.name, "vulkan", passes, /*strict=*/true);
      check_zoo_file(z, *m, "vulkan --passes " + passes, {.greedy_smoke = false});
    }
  }
}

TEST_CASE("vulkan: --strict refuses a zoo file whose ops the backend lacks, naming the node and why" * needs(vulkan_tests())) {
  require_vulkan_device();
  for (const auto& [name, op] : kVulkanLacks) {
    if (op.empty()) continue;
    CAPTURE(name);
    const auto r = run_tessera({"run", "--backend", "vulkan", "--strict", "-m", shared_path("models/zoo/" + name + ".gguf"),
                                "--prompt-ids", "1,30,40", "--temp", "0", "-n", "8", "--print-ids"});
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("--strict: vulkan:0 cannot run ") != std::string::npos);
    CHECK(r.err.find("(" + op + ", ") != std::string::npos);
  }
}
