// Plugins load at run time, and a backend that lacks kernels is reported,
// never silently replaced.
#include <doctest/doctest.h>

#include <cstdlib>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

namespace {

// The skeleton plugin lives in build/plugins-dev, beside build/bin.
std::string plugin_dir() { return std::string(TESSERA_BIN).substr(0, std::string(TESSERA_BIN).rfind("/bin/")) + "/plugins-dev"; }

CliResult with_plugins(std::vector<std::string> args) {
  setenv("TESSERA_BACKEND_PATH", plugin_dir().c_str(), 1);
  CliResult r = run_tessera(args);
  unsetenv("TESSERA_BACKEND_PATH");
  return r;
}

}  // namespace

TEST_CASE("the skeleton plugin is found through TESSERA_BACKEND_PATH and listed by tessera devices") {
  const auto r = with_plugins({"devices"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("skeleton:0  skeleton (runs nothing)") != std::string::npos);
  CHECK(r.out.find("cpu:0") != std::string::npos);
}

TEST_CASE("a backend without the kernels is reported once, a line per kind of node, and the model runs on the cpu") {
  const auto r = with_plugins({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1,277", "--temp", "0", "-n", "8",
                               "--print-ids", "--backend", "skeleton"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("skeleton:0 cannot run blk.0.attn_q (matmul, f32): the skeleton backend implements no kernels") != std::string::npos);
  CHECK(r.err.find("more nodes like it") != std::string::npos);
  CHECK(r.err.find(" nodes run on cpu:0 instead of skeleton:0, with 0 copies") != std::string::npos);
  // Once: each kind of node has one line, however many nodes it has.
  CHECK(r.err_lines().size() < 14);  // 10 kinds of node (the greedy sampler included), the summary, the KV cache, the metrics
  CHECK(trim(r.out).rfind("1,277,", 0) == 0);
}

TEST_CASE("--strict refuses to run a model the backend cannot run") {
  const auto r = with_plugins({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1", "--temp", "0", "-n", "4",
                               "--print-ids", "--backend", "skeleton", "--strict"});
  CHECK(r.exit_code != 0);
  REQUIRE(r.err_lines().size() == 1);
  CHECK(r.err.find("--strict: skeleton:0 cannot run token_embd") != std::string::npos);
}
