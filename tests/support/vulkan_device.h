#pragma once
// Where the Vulkan plugin is built and TESSERA_NO_VULKAN is not 1, a case that
// needs the device requires it: a missing device is a failure (CI installs
// lavapipe; a broken driver must not pass as a skip).
#include <doctest/doctest.h>

#include <string>

#include "support/cli.h"

namespace tessera::testing {

// Empty when `tessera devices` lists vulkan:0; otherwise what it said instead.
// Asked once per process.
inline const std::string& vulkan_device_problem() {
  static const std::string problem = [] {
    const auto r = run_tessera({"devices"});
    if (r.exit_code != 0) return "tessera devices failed: " + r.err;
    if (r.out.find("\nvulkan:0 ") != std::string::npos || r.out.rfind("vulkan:0 ", 0) == 0) return std::string();
    const auto at = r.out.find("vulkan: no device");
    if (at != std::string::npos) return r.out.substr(at, r.out.find('\n', at) - at);
    return "no vulkan backend: libtessera-backend-vulkan.so was not built or did not load\n" + r.out;
  }();
  return problem;
}

inline void require_vulkan_device() {
  REQUIRE_MESSAGE(vulkan_device_problem().empty(),
                  vulkan_device_problem() << " (a built Vulkan plugin without a device fails; TESSERA_NO_VULKAN=1 skips the Vulkan tests)");
}

}  // namespace tessera::testing
