// The ISA probe and switch that every other conformance test iterates.
#include <algorithm>
#include <string>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "conformance.h"

namespace tessera::testing {
namespace {

TEST_CASE("runnable ISAs start with portable, end with the detected best, and force_isa switches between them") {
  const auto isas = cpu::runnable_isas();
  REQUIRE(!isas.empty());
  CHECK(isas.front() == cpu::Isa::portable);
  CHECK(isas.back() == cpu::detect_isa());
  const cpu::Isa before = cpu::active_isa();
  for_each_isa([&](cpu::Isa isa) { CHECK(cpu::active_isa() == isa); });
  CHECK(cpu::active_isa() == before);
  CHECK(cpu::name(cpu::Isa::portable) == "portable");
  CHECK(cpu::name(cpu::Isa::avx2) == "avx2");
  CHECK(cpu::name(cpu::Isa::avx512_vnni) == "avx512_vnni");
  CHECK(cpu::name(cpu::Isa::neon_dotprod) == "neon_dotprod");
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    CHECK(cpu::detect_isa() == cpu::Isa::avx512_vnni);
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    CHECK(cpu::detect_isa() == cpu::Isa::avx2);
#elif defined(__aarch64__)
  // qemu-aarch64's default CPU (max) has the dot product; so do Cortex-A55/A76 and later.
  CHECK(cpu::detect_isa() == ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) ? cpu::Isa::neon_dotprod : cpu::Isa::portable));
  for (cpu::Isa x86 : {cpu::Isa::avx2, cpu::Isa::avx512_vnni})
    CHECK(std::find(isas.begin(), isas.end(), x86) == isas.end());
#endif
}

}  // namespace
}  // namespace tessera::testing
