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

std::string cpu_arch(kernels::cpu::Isa isa) {
#if defined(__x86_64__)
  // The psABI levels: avx512_vnni kernels use AVX-512 F/BW/VL/DQ (v4) plus
  // VNNI; the avx2 ones AVX2 and FMA (v3); portable ones the baseline.
  switch (isa) {
    case kernels::cpu::Isa::avx512_vnni: return "x86-64-v4+avx512vnni";
    case kernels::cpu::Isa::avx2: return "x86-64-v3";
    case kernels::cpu::Isa::portable: return "x86-64";
    case kernels::cpu::Isa::neon_dotprod: break;  // not an x86 family
  }
  return "x86-64";
#elif defined(__aarch64__)
  // neon_dotprod kernels use Armv8.2-A's dot product (sdot); portable ones the baseline.
  return isa == kernels::cpu::Isa::neon_dotprod ? "armv8.2-a+dotprod" : "armv8-a";
#else
  (void)isa;
  return "generic";
#endif
}

Expected<uint64_t> available_host_memory() {
  std::ifstream f("/proc/meminfo");
  if (!f) return unsupported("cpu: free memory: cannot read /proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib) {
    std::getline(f, unit);  // " kB", or nothing for counters
    if (key == "MemAvailable:") return kib << 10;
  }
  return unsupported("cpu: free memory: /proc/meminfo has no MemAvailable line");
}

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
  info.notifies_kv_writes = true;  // CpuExecutable::run calls StepArgs::kv_written after each append
  info.arch = cpu_arch(isa);
  info.simd_width_bits = isa == kernels::cpu::Isa::avx512_vnni ? 512 : isa == kernels::cpu::Isa::avx2 ? 256 : 128;
  for (auto i : kernels::cpu::runnable_isas()) info.features.emplace_back(kernels::cpu::name(i));
  info.roofs = cpu_roofs({threads, info.simd_width_bits, isa == kernels::cpu::Isa::avx512_vnni, info.last_level_cache_bytes});
  return info;
}

}  // namespace tessera::cpu
