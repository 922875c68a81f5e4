// tessera devices: every backend and device this process sees.
#include <CLI/CLI.hpp>
#include <cstdio>

#include <tessera/tessera.h>
#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

std::string mib(uint64_t b) { return std::to_string(b >> 20) + " MiB"; }

int devices_main() {
  for (const auto& r : list_devices()) {
    if (r.devices.empty()) {
      std::printf("%s: no device (%s)\n", r.backend.c_str(), r.why_none.c_str());
      continue;
    }
    for (size_t i = 0; i < r.devices.size(); ++i) {
      const DeviceInfo& d = r.devices[i];
      std::printf("%s:%d  %s\n", r.backend.c_str(), d.index, d.name.c_str());
      // Free memory is asked of the opened device; a device that cannot say shows why.
      const auto free = free_device_memory(r.backend, d.index);
      const std::string free_text = free ? mib(*free) + " free" : "free memory unknown: " + free.status().message();
      std::printf("    arch %s, kind %s, %u compute units, %s memory (%s), %u-bit SIMD (%s kernels)\n", d.arch.c_str(),
                  to_string(d.kind), d.compute_units, mib(d.memory_bytes).c_str(), free_text.c_str(), d.simd_width_bits,
                  d.kernel_isa.c_str());
      std::printf("    caches: L1d %llu KiB, L2 %llu KiB, last level %s\n", (unsigned long long)(d.l1_bytes >> 10),
                  (unsigned long long)(d.l2_bytes >> 10), mib(d.last_level_cache_bytes).c_str());
      if (d.subgroup_size)
        std::printf("    workgroups: subgroup %u, up to %u invocations, %llu KiB shared memory\n", d.subgroup_size,
                    d.max_workgroup_invocations, (unsigned long long)(d.shared_memory_per_group_bytes >> 10));
      std::string feats;
      for (const auto& ft : d.features) feats += (feats.empty() ? "" : ", ") + ft;
      std::printf("    features: %s\n", feats.c_str());
      if (d.roofs.source == RoofSource::unknown)
        std::printf("    roofs: not measured here (tessera bench measures read bandwidth)\n");
      else
        std::printf("    roofs (%s): read %.1f GB/s, f32 %.0f GFLOP/s, bf16 %s, int8 %.0f GOP/s\n", to_string(d.roofs.source),
                    d.roofs.read_GBps, d.roofs.f32_GFLOPs,
                    d.roofs.bf16_GFLOPs > 0 ? (std::to_string((long long)d.roofs.bf16_GFLOPs) + " GFLOP/s").c_str() : "none",
                    d.roofs.int8_GOPs);
    }
  }
  for (const auto& e : backend_load_errors()) std::printf("plugin not loaded: %s\n", e.c_str());
  return 0;
}

}  // namespace

Subcommand add_devices(CLI::App& app) {
  CLI::App* s = app.add_subcommand("devices", "list backends and devices");
  return {s, devices_main};
}

}  // namespace tessera::cli
