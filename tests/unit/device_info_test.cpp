// DeviceInfo's index and arch, and Device::free_memory, on the CPU backend
// (the Vulkan ones are in tests/vulkan/vulkan_devices_test.cpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/runtime/model_runner.h"

using namespace tessera;

namespace {

// MemAvailable read here, apart from the backend's reader: the oracle.
uint64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;
  return 0;
}

}  // namespace

TEST_CASE("cpu device: index 0, an x86-64 level for the kernels it chose, and MemAvailable as its free memory") {
  auto d = open_device("cpu", 0);
  REQUIRE_MESSAGE(d.has_value(), d.status().message());
  const DeviceInfo& info = (*d)->info();
  CHECK(info.index == 0);
#if defined(__x86_64__)
  // The level names the instructions of the kernel family in use (kernel_isa).
  const std::string want = info.kernel_isa == "avx512_vnni" ? "x86-64-v4+avx512vnni" : info.kernel_isa == "avx2" ? "x86-64-v3" : "x86-64";
  CHECK(info.arch == want);
#else
  CHECK(!info.arch.empty());
#endif
  auto free = (*d)->free_memory();
  REQUIRE_MESSAGE(free.has_value(), free.status().message());
  CHECK(*free > 0);
  CHECK(*free <= info.memory_bytes);
  // Other processes allocate meanwhile: within 256 MiB of a second reading.
  const uint64_t oracle = mem_available_bytes();
  REQUIRE(oracle > 0);
  const uint64_t diff = *free > oracle ? *free - oracle : oracle - *free;
  CHECK_MESSAGE(diff < (256ull << 20), "backend " << *free << " B, /proc/meminfo " << oracle << " B");

  auto missing = open_device("cpu", 1);
  REQUIRE(!missing.has_value());
  CHECK(missing.status().message() == "cpu backend: device 1 does not exist (only device 0)");
}
