#include "backends/cpu/cpu_info.h"

#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "backends/cpu/cpu_roofs.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tessera::cpu {

namespace {

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

uint64_t parse_cache_size(const std::string& s) {
  if (s.empty()) return 0;
  uint64_t v = std::stoull(s);
  if (s.back() == 'K') v <<= 10;
  if (s.back() == 'M') v <<= 20;
  return v;
}

// index0..N of cpu0's caches: level and size.
void read_caches(DeviceInfo& info) {
  for (int i = 0; i < 8; ++i) {
    const std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lf(base + "level"), sf(base + "size"), tf(base + "type");
    int level = 0;
    std::string size, type;
    if (!(lf >> level) || !(sf >> size)) break;
    tf >> type;
    const uint64_t bytes = parse_cache_size(size);
    if (level == 1 && type != "Instruction") info.l1_bytes = bytes;
    if (level == 2) info.l2_bytes = bytes;
    if (level >= 2 && bytes > info.last_level_cache_bytes) info.last_level_cache_bytes = bytes;
  }
}

}  // namespace

DeviceInfo probe_cpu_info(int threads) {
  DeviceInfo info;
  info.backend = "cpu";
  info.kind = DeviceKind::cpu;
  info.name = cpu_model_name() + " (" + std::to_string(threads) + " threads)";
  info.compute_units = (uint32_t)threads;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) info.memory_bytes = (uint64_t)pages * (uint64_t)page;
  read_caches(info);
  const auto isa = kernels::cpu::active_isa();
  info.kernel_isa = std::string(kernels::cpu::name(isa));
  info.simd_width_bits = isa == kernels::cpu::Isa::avx512_vnni ? 512 : isa == kernels::cpu::Isa::avx2 ? 256 : 128;
  for (auto i : kernels::cpu::runnable_isas()) info.features.emplace_back(kernels::cpu::name(i));
  info.roofs = cpu_roofs({threads, info.simd_width_bits, isa == kernels::cpu::Isa::avx512_vnni, info.last_level_cache_bytes});
  return info;
}

}  // namespace tessera::cpu
