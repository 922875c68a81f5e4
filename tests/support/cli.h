#pragma once
// Runs the tessera CLI as a user would and captures what it printed.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "support/reference_cases.h"

namespace tessera::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
  // stderr's lines (without the trailing newline)
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream is(err);
    for (std::string l; std::getline(is, l);) lines.push_back(l);
    return lines;
  }
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string temp_dir() {
  static const std::string dir = [] {
    std::string t = "/tmp/tessera-test-XXXXXX";
    const char* d = mkdtemp(t.data());
    return std::string(d ? d : "/tmp");
  }();
  return dir;
}

// The CLI under `prefix` (a launcher: timeout, mpirun), each argument quoted.
inline CliResult run_tessera_under(const std::vector<std::string>& prefix, const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string base = temp_dir() + "/cli" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  // TESSERA_TEST_EMULATOR: a command the CLI runs under, e.g. "qemu-aarch64 -L
  // /usr/aarch64-linux-gnu" for a cross-built tree (tests/arm64/run_arm64.sh),
  // where the host cannot exec the binary itself.
  const char* emulator = std::getenv("TESSERA_TEST_EMULATOR");
  std::string cmd;
  for (const auto& p : prefix) {
    cmd += shell_quote(p);
    cmd += ' ';
  }
  if (emulator != nullptr && *emulator != '\0') cmd += std::string(emulator) + " ";
  cmd += shell_quote(TESSERA_BIN);
  for (const auto& a : args) {
    cmd += ' ';  // (`" " + shell_quote(a)` draws a false -Wrestrict from GCC 12 where this is inlined)
    cmd += shell_quote(a);
  }
  cmd += " >" + base + ".out 2>" + base + ".err </dev/null";
  const int rc = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

inline CliResult run_tessera(const std::vector<std::string>& args) { return run_tessera_under({}, args); }

// The ids `--print-ids` printed: stdout's one line.
inline std::vector<int32_t> ids_from_stdout(const CliResult& r) {
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string line = trim(r.out);
  REQUIRE_MESSAGE(line.find('\n') == std::string::npos, "--print-ids must print exactly one line");
  return parse_ids(line);
}

inline std::string shared_path(const std::string& rel) { return std::string(TESSERA_SHARED_DIR) + "/" + rel; }

}  // namespace tessera::testing
