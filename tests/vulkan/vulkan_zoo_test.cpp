// The model zoo on the Vulkan backend against llama.cpp, with the CPU's
// bounds. The backend has a shader for every op the zoo's architectures need
// (qwen2's bias_add, phi3's packed matmul_qkv and matmul_silu_mul, qwen3's
// per-head norms, gemma2's window, soft-caps and GeGLU), so every file runs
// with every node on the device, no placement notes, and again --strict. A
// node the backend lacks still runs on the CPU and says so, and --strict
// refuses it naming the node: that path is tested on a printed graph whose
// rope reads a folded RoPE table (which the Vulkan shader does not take).
// llama3's RoPE frequency factors, on a llama file given rope_freqs.weight,
// reach every rope on the device.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "support/llama3_rope_freqs.h"
#include "support/rope_table_graph.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

namespace {

std::unique_ptr<tessera::Model> open_model(const std::string& path, const std::string& backend, bool strict) {
  tessera::register_builtin_backends();
  tessera::BackendRegistry::global().load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
  tessera::ModelOptions o;
  o.path = path;
  o.backend = backend;
  o.strict = strict;
  o.max_context = 64;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return std::move(*m);
}

std::unique_ptr<tessera::Model> open_vulkan(const ZooFile& z, bool strict) {
  return open_model(shared_path("models/zoo/" + z.name + ".gguf"), "vulkan", strict);
}

}  // namespace

TEST_CASE("vulkan: every zoo architecture matches llama.cpp with every node on the device, and again --strict" * needs(vulkan_tests())) {
  require_vulkan_device();
  for (const ZooFile& z : zoo_files()) {
    if (is_quant_llama(z)) continue;  // the next case's
    CAPTURE(z.name);
    auto m = open_vulkan(z, false);
    const auto& notes = m->placement_notes();
    std::string shown;
    for (const std::string& n : notes) shown += "\n  " + n;
    MESSAGE(z.name << " on vulkan: " << (notes.empty() ? "every node on the device" : "on the CPU instead:" + shown));
    CHECK(notes.empty());
    check_zoo_file(z, *m, "vulkan", {.greedy_smoke = false});
    auto strict = open_vulkan(z, true);
    check_zoo_file(z, *strict, "vulkan --strict", {.greedy_smoke = false});
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

TEST_CASE("vulkan: --strict refuses a node the backend lacks (a rope reading a folded table), naming it and why, and without it runs on the CPU" *
          needs(vulkan_tests())) {
  require_vulkan_device();
  const std::string ir = temp_dir() + "/vulkan-rope-table.ir";
  {
    std::ofstream f(ir);
    f << kRopeWithTable;
  }
  const auto placed = run_tessera({"ir", "--parse", ir, "--target", "vulkan", "--passes", "place"});
  REQUIRE_MESSAGE(placed.exit_code == 0, placed.err);
  CHECK(placed.out.find("@cpu:0  # rope") != std::string::npos);
  const auto strict = run_tessera({"ir", "--parse", ir, "--target", "vulkan", "--passes", "place", "--strict"});
  CHECK(strict.exit_code != 0);
  CHECK(strict.err.find("--strict: vulkan:0 cannot run rope (rope, f32): ") != std::string::npos);
  CHECK(strict.err.find("rope_table") != std::string::npos);
}

TEST_CASE("vulkan: llama3's rope_freqs.weight reaches every rope on the device: factors of one change nothing, others give the CPU's logits" *
          needs(vulkan_tests())) {
  require_vulkan_device();
  const auto ids = zoo_cases("llama-f32")[2].full;
  const std::string ones = llama_with_freq_factors(std::vector<float>(16, 1.0f), "vk-ones");
  const std::string ramp = llama_with_freq_factors(ramp_freq_factors(16), "vk-ramp");
  auto logits = [&](const std::string& path, const std::string& backend) {
    auto m = open_model(path, backend, backend == "vulkan");
    CHECK(m->placement_notes().empty());
    return teacher_forced(*m, ids);
  };
  const auto plain = logits(shared_path("models/zoo/llama-f32.gguf"), "vulkan");
  // Dividing by one is the identity: the device's RoPE table is the same.
  CHECK(logits(ones, "vulkan") == plain);
  const auto with_ramp = logits(ramp, "vulkan");
  const double moved = whole_nmse(with_ramp, plain), off_cpu = whole_nmse(with_ramp, logits(ramp, "cpu"));
  MESSAGE("factors 1, 1.5, ...: NMSE " << moved << " from the plain file's logits, " << off_cpu << " from the CPU's");
  CHECK(moved > 1e-6);
  CHECK(off_cpu < 1e-10);
}
