// Per-node placement on a real driver: nodes pinned to the CPU (--place)
// run there, with copies between the devices each step, and the model still
// gives run.c's greedy ids; --strict refuses what would leave the device.
// TESSERA_NO_VULKAN=1 makes them report themselves skipped, as in vulkan_e2e_test.cpp.
#include <doctest/doctest.h>

#include <cstdlib>

#include "support/cli.h"
#include "support/reference_cases.h"
#include "support/requirements.h"
#include "support/vulkan_device.h"

using namespace tessera::testing;

TEST_CASE("vulkan placement: attention, a whole layer or the classifier on the cpu still give run.c's ids" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 3);
  // Attention moves its layer's KV append with it (one pool, one device); a
  // layer on the cpu crosses twice; the classifier leaves the logits on the cpu.
  for (const char* place : {"paged_attention=cpu", "blk.2.*=cpu", "output=cpu,output_norm=cpu"}) {
    for (size_t i = 0; i < 3; ++i) {
      CAPTURE(place);
      CAPTURE(cases[i].prompt_ids);
      const auto r = run_tessera({"run", "--backend", "vulkan", "--print-ids", "--place", place, "-m", shared_path("models/stories260K.bin"),
                                  "--prompt-ids", cases[i].prompt_ids, "--temp", "0", "-n", "120"});
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      const auto ids = parse_ids(trim(r.out));
      REQUIRE(ids.size() >= 100);
      REQUIRE(cases[i].full_ids.size() >= ids.size());
      CHECK(join_ids(ids) == join_ids(std::vector<int32_t>(cases[i].full_ids.begin(), cases[i].full_ids.begin() + (ptrdiff_t)ids.size())));
      // Reported once: a line per kind of node, then the summary.
      CHECK(r.err.find("--place puts ") != std::string::npos);
      CHECK(r.err.find(" nodes run on cpu:0 instead of vulkan:0, with ") != std::string::npos);
    }
  }
}

TEST_CASE("vulkan placement: tessera ir --target vulkan shows the devices and the copies, --strict with --place is refused" * needs(vulkan_tests())) {
  require_vulkan_device();
  const auto ir = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--target", "vulkan", "--place", "paged_attention=cpu"});
  REQUIRE_MESSAGE(ir.exit_code == 0, ir.err);
  CHECK(ir.out.find("@vulkan:0  # blk.0.attn_q") != std::string::npos);
  CHECK(ir.out.find("@cpu:0  # blk.0.attention") != std::string::npos);
  CHECK(ir.out.find("@cpu:0  # blk.0.kv_append") != std::string::npos);
  CHECK(ir.out.find("= copy(") != std::string::npos);
  const auto strict = run_tessera({"run", "--backend", "vulkan", "--strict", "--place", "paged_attention=cpu", "-m",
                                   shared_path("models/stories260K.bin"), "--prompt-ids", "1", "-n", "4"});
  CHECK(strict.exit_code != 0);
  CHECK(strict.err_lines().size() == 1);
}
