// `tessera ir` as a user runs it: bad input is one line naming the file,
// line or flag; printing after a pass shows that pass's graph.
#include <doctest/doctest.h>

#include <fstream>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

TEST_CASE("tessera ir --parse refuses a malformed file with one line naming the file and line") {
  const std::string path = "ir_command_bad.ir";
  {
    std::ofstream f(path, std::ios::binary);
    f << "graph @bad {\n  %0 = input \"token_ids\" : i32[T]\n  %1 = embedding(%0, %0) : f33[T, 8]\n  return %1\n}\n";
  }
  const auto r = run_tessera({"ir", "--parse", path});
  CHECK(r.exit_code == 2);
  REQUIRE(r.err_lines().size() == 1);
  CHECK(r.err.find("tessera: ir_command_bad.ir:3: expected a dtype like f32 or q8_0, got 'f33'") == 0);
}

TEST_CASE("tessera ir --parse refuses a well-formed graph the verifier rejects") {
  const std::string path = "ir_command_unverified.ir";
  {
    std::ofstream f(path, std::ios::binary);
    f << "graph @bad {\n  %0 = input \"token_ids\" : i32[T]\n  %1 = weight \"emb\" : f32[16, 8]\n"
         "  %2 = embedding(%1, %0) : f32[T, 9]  # embd\n  return %2\n}\n";
  }
  const auto r = run_tessera({"ir", "--parse", path});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("embd: output %2 is f32[T, 9]; the shape rule of embedding gives f32[T, 8]") != std::string::npos);
}

TEST_CASE("tessera ir --print-after NAME prints the graph after that pass only") {
  const auto r = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--print-after", "fuse_qkv"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("// after fuse_qkv\n") == 0);
  CHECK(r.out.find("matmul_qkv(") != std::string::npos);
  CHECK(r.out.find("matmul_silu_mul(") == std::string::npos);  // fuse_gate_up runs later
  const auto bad = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--print-after", "fuse_all"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--print-after: 'fuse_all' is not a pass") != std::string::npos);
}

TEST_CASE("tessera ir --memory-plan prints the arena plan at the lower bound, and the output still parses") {
  const auto r = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--memory-plan", "1"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // stories260K decode: the logits (512 f32) and the classifier's input (64 f32) are what must coexist.
  CHECK(r.out.find("// memory plan: peak 2304 B, lower bound 2304 B\n") != std::string::npos);
  const std::string path = "ir_command_memory_plan.ir";
  {
    std::ofstream f(path, std::ios::binary);
    f << r.out;
  }
  const auto back = run_tessera({"ir", "--parse", path});
  CHECK_MESSAGE(back.exit_code == 0, back.err);
}

TEST_CASE("tessera ir prints every zoo architecture's graph, unfused and fused, and --parse reads each back") {
  for (const std::string arch : {"llama", "qwen2", "qwen3", "gemma2", "phi3"}) {
    for (const std::string passes : {"none", "default"}) {
      CAPTURE(arch);
      CAPTURE(passes);
      const auto r = run_tessera({"ir", "-m", shared_path("models/zoo/" + arch + "-f32.gguf"), "--passes", passes, "--ctx", "64"});
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      CHECK(r.out.find("graph @" + arch + " {") != std::string::npos);
      const std::string path = "ir_command_zoo_" + arch + "_" + passes + ".ir";
      {
        std::ofstream f(path, std::ios::binary);
        f << r.out;
      }
      const auto back = run_tessera({"ir", "--parse", path});
      CHECK_MESSAGE(back.exit_code == 0, back.err);
    }
  }
}
