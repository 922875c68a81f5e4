// `tessera ir` and fold_constants as a user sees them: the printed graph shows
// the RoPE table sized for --ctx, it parses back and verifies, and a table
// whose declared type its recipe does not make is one line naming it.
#include <doctest/doctest.h>

#include <fstream>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

TEST_CASE("tessera ir -m shows one folded RoPE table of --ctx rows, and --parse verifies it") {
  const auto r = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--ctx", "128"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // stories260K: 8 heads of 8 dims, all rotated.
  const std::string decl = "constant \"rope_table.0\" : f32[128, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=128}";
  CHECK(r.out.find(decl) != std::string::npos);
  CHECK(r.out.find("rope_table.1") == std::string::npos);
  const std::string path = "fold_constants_cli.ir";
  {
    std::ofstream f(path, std::ios::binary);
    f << r.out;
  }
  const auto back = run_tessera({"ir", "--parse", path});
  CHECK_MESSAGE(back.exit_code == 0, back.err);
  CHECK(back.out == r.out);

  std::string bad = r.out;
  bad.replace(bad.find("f32[128, 4, 2] {recipe"), 14, "f32[100, 4, 2]");
  const std::string bad_path = "fold_constants_cli_bad.ir";
  {
    std::ofstream f(bad_path, std::ios::binary);
    f << bad;
  }
  const auto refused = run_tessera({"ir", "--parse", bad_path});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err_lines().size() == 1);
  CHECK(refused.err.find("constant 'rope_table.0': declared f32[100, 4, 2]; its recipe rope_table makes f32[128, 4, 2]") !=
        std::string::npos);
}

TEST_CASE("tessera ir --passes default,-fold_constants prints no constant") {
  const auto r = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--passes", "default,-fold_constants"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("constant \"") == std::string::npos);
}
