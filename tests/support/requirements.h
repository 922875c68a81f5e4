#pragma once
// Cases that need something a machine may lack declare it with a decorator,
//   TEST_CASE("vulkan: ..." * needs(vulkan_tests())) { ... }
// so that where it is absent doctest does not run them and CTest reports them
// Skipped, never Passed: the reason is printed once per process after
// kSkipMarker, and tests/CMakeLists.txt's SKIP_REGULAR_EXPRESSION matches
// that marker followed by doctest's "test cases: 0 | 0 passed | 0 failed |".
// Absent means absent by the machine's own choice (TESSERA_NO_VULKAN=1, no
// `node` installed); something built or installed but broken is not absent,
// and its cases run and FAIL (tests/README.md).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tessera::testing {

inline constexpr const char* kSkipMarker = "[tessera tests] skipping";

struct Requirement {
  std::string what;     // "the Vulkan tests"
  std::string missing;  // why they cannot run here; empty when they can
};

// Says once, on stderr (stdout is doctest's list of cases at discovery), why
// the cases that need `r` are skipped.
inline Requirement announce(Requirement r) {
  if (!r.missing.empty()) std::fprintf(stderr, "%s %s: %s\n", kSkipMarker, r.what.c_str(), r.missing.c_str());
  return r;
}

inline doctest::skip needs(const Requirement& r) { return doctest::skip(!r.missing.empty()); }

// The Vulkan tests exist only where the plugin is built; there, only
// TESSERA_NO_VULKAN=1 skips them. A built plugin without a device fails
// (require_vulkan_device in tests/support/vulkan_device.h).
inline const Requirement& vulkan_tests() {
  static const Requirement r = [] {
    const char* v = std::getenv("TESSERA_NO_VULKAN");
    return announce({"the Vulkan tests", v && std::string(v) == "1" ? "TESSERA_NO_VULKAN=1" : ""});
  }();
  return r;
}

// The npm oracles in tests/oracle need Node.js. With node but without
// tests/oracle/node_modules the cases run and fail (require_oracle_packages()
// in tests/formats/node_oracle.h).
inline const Requirement& node_oracle() {
  static const Requirement r = announce(
      {"the cases that need the npm oracles", std::system("command -v node >/dev/null 2>&1") == 0
                                                  ? ""
                                                  : "no `node` on PATH, so the npm oracles in tests/oracle cannot run (install nodejs and npm)"});
  return r;
}

// The server tests that check raw SSE framing run curl.
inline const Requirement& curl_tool() {
  static const Requirement r = announce(
      {"the cases that need curl", std::system("command -v curl >/dev/null 2>&1") == 0 ? "" : "no `curl` on PATH (install curl)"});
  return r;
}

// Cases that time rather than check (the figures docs/performance.md quotes):
// run only with TESSERA_TIMING=1 (or doctest's --no-skip), reported Skipped otherwise.
inline const Requirement& timing_cases() {
  static const Requirement r = [] {
    const char* v = std::getenv("TESSERA_TIMING");
    return announce({"the timing cases", v && std::string(v) == "1" ? "" : "they time, not check: run with TESSERA_TIMING=1"});
  }();
  return r;
}

}  // namespace tessera::testing
