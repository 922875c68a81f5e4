// Two Vulkan devices by index: $TESSERA_VULKAN_DEVICES=0,0 lists the first
// physical device twice (lavapipe in CI), as vulkan:0 and vulkan:1, each its
// own VkDevice, so one model can be split across them with --place and
// still give run.c's greedy ids. TESSERA_NO_VULKAN=1 makes them report
// themselves skipped, as in vulkan_e2e_test.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <sstream>

#include "support/cli.h"
#include "support/reference_cases.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"

using namespace tessera::testing;

namespace {

// Sets an environment variable for the CLI runs of one scope (they inherit it), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The text after "NAME  " on the line that starts with NAME ("vulkan:1"), or "" when no line does.
std::string device_line(const std::string& out, const std::string& name) {
  const std::string head = name + "  ";
  size_t at = out.rfind(head, 0) == 0 ? 0 : out.find("\n" + head);
  if (at == std::string::npos) return "";
  if (at != 0) ++at;
  return out.substr(at + head.size(), out.find('\n', at) - at - head.size());
}

}  // namespace

TEST_CASE("vulkan devices: TESSERA_VULKAN_DEVICES=0,0 lists vulkan:0 and vulkan:1 with arch and free memory, and a bad list is one line" * needs(vulkan_tests())) {
  require_vulkan_device();
  {
    ScopedEnv env("TESSERA_VULKAN_DEVICES", "0,0");
    const auto r = run_tessera({"devices"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string first = device_line(r.out, "vulkan:0"), second = device_line(r.out, "vulkan:1");
    REQUIRE_MESSAGE(!first.empty(), r.out);
    CHECK(second == first);  // the same physical device, listed twice
    CHECK(device_line(r.out, "vulkan:2").empty());
    CHECK(r.out.find("    arch ") != std::string::npos);
    CHECK(r.out.find(" free)") != std::string::npos);
    if (first.find("llvmpipe") != std::string::npos) CHECK(r.out.find("    arch lavapipe, ") != std::string::npos);
  }
  {
    // An index the backend does not list: one line, naming the variable that lists more.
    ScopedEnv env("TESSERA_VULKAN_DEVICES", "");  // empty: the usual list
    const auto r = run_tessera({"run", "--backend", "vulkan", "--place", "blk.0.*=vulkan:9", "-m", shared_path("models/stories260K.bin"),
                                "--prompt-ids", "1", "-n", "2"});
    CHECK(r.exit_code != 0);
    REQUIRE(r.err_lines().size() == 1);
    CHECK(r.err.find("--place: device 'vulkan:9' for 'blk.0.*': vulkan backend: device 9 does not exist (") != std::string::npos);
    CHECK(r.err.find("TESSERA_VULKAN_DEVICES") != std::string::npos);
  }
  for (const char* bad : {"0,9", "x", "0,,0", "-1"}) {
    CAPTURE(bad);
    ScopedEnv env("TESSERA_VULKAN_DEVICES", bad);
    const auto r = run_tessera({"devices"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("vulkan: no device (TESSERA_VULKAN_DEVICES='" + std::string(bad) + "': ") != std::string::npos);
    CHECK(r.out.find("expected a comma-separated list of physical-device indices from 0 to ") != std::string::npos);
    const auto run = run_tessera({"run", "--backend", "vulkan", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1", "-n", "2"});
    CHECK(run.exit_code != 0);
    CHECK(run.err_lines().size() == 1);
    CHECK(run.err.find("TESSERA_VULKAN_DEVICES='" + std::string(bad) + "'") != std::string::npos);
  }
}

TEST_CASE("vulkan devices: the first layers on vulkan:1, the rest on vulkan:0, give run.c's greedy ids" * needs(vulkan_tests())) {
  require_vulkan_device();
  ScopedEnv env("TESSERA_VULKAN_DEVICES", "0,0");
  const std::string place = "blk.0.*=vulkan:1,blk.1.*=vulkan:1,blk.2.*=vulkan:1";
  const std::string model = shared_path("models/stories260K.bin");
  // The IR shows the split and the copies between the two devices.
  const auto ir = run_tessera({"ir", "-m", model, "--target", "vulkan:0", "--strict", "--place", place});
  REQUIRE_MESSAGE(ir.exit_code == 0, ir.err);
  CHECK(ir.out.find("@vulkan:1  # blk.0.attn_q") != std::string::npos);
  CHECK(ir.out.find("@vulkan:0  # blk.3.attn_q") != std::string::npos);
  // Every node of blk.0-2 on vulkan:1, of blk.3-4 on vulkan:0 (copies are on their reader's device).
  std::istringstream lines(ir.out);
  size_t checked = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" = copy(") != std::string::npos) continue;
    for (const char* layer : {"blk.0.", "blk.1.", "blk.2.", "blk.3.", "blk.4."}) {
      if (line.find(std::string("  # ") + layer) == std::string::npos) continue;
      const bool first_half = layer[4] <= '2';
      CHECK_MESSAGE(line.find(first_half ? " @vulkan:1  # " : " @vulkan:0  # ") != std::string::npos, line);
      ++checked;
    }
  }
  CHECK(checked > 40);
  CHECK(ir.out.find("@cpu") == std::string::npos);
  CHECK(ir.out.find("@vulkan:1  # token_embd to vulkan:1") != std::string::npos);

  // Lavapipe compiles every pipeline once per VkDevice, so one reference case.
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(!cases.empty());
  const auto r = run_tessera({"run", "--backend", "vulkan", "--strict", "--print-ids", "--place", place, "-m", model,
                              "--prompt-ids", cases[0].prompt_ids, "--temp", "0", "-n", "120"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto ids = parse_ids(trim(r.out));
  REQUIRE(ids.size() >= 100);
  REQUIRE(cases[0].full_ids.size() >= ids.size());
  CHECK(join_ids(ids) == join_ids(std::vector<int32_t>(cases[0].full_ids.begin(), cases[0].full_ids.begin() + (ptrdiff_t)ids.size())));
  // Reported: what runs on vulkan:1, and the copies between the two.
  CHECK(r.err.find(" nodes run on vulkan:1 instead of vulkan:0, with ") != std::string::npos);
}
