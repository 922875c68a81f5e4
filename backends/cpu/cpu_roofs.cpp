#include "backends/cpu/cpu_roofs.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/compute_roofs.h"
#include "core/read_bandwidth.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

Roofs nominal_roofs(const CpuRoofsQuery& q) {
  // 3 GHz, two FMA ports, 8 GB/s of DRAM bandwidth per core up to 8 cores.
  Roofs r;
  const double cores = std::max(1, q.threads);
  r.f32_GFLOPs = cores * 3.0 * 2 * 2 * (q.simd_width_bits / 32.0);
  r.int8_GOPs = r.f32_GFLOPs * (q.vnni ? 4 : 2);
  r.bf16_GFLOPs = 0;  // not assumed: only a probe can say the CPU has bf16 dots
  r.read_GBps = 8.0 * std::min(cores, 8.0);
  r.source = RoofSource::nominal;
  return r;
}

Roofs measure(const CpuRoofsQuery& q) {
  const char* env = std::getenv("TESSERA_CPU_ROOFS");
  const std::string mode = env ? env : "";
  if (mode == "off") return {};
  if (mode == "nominal") return nominal_roofs(q);
  // The probes bench runs too (core/), on a pool of the backend's size.
  ThreadPool pool(std::max(1, q.threads));
  Roofs r;
  r.f32_GFLOPs = measure_compute_roof(pool, ComputeDtype::f32_fma).GFLOPs;
  r.bf16_GFLOPs = measure_compute_roof(pool, ComputeDtype::bf16_dot).GFLOPs;
  r.int8_GOPs = measure_compute_roof(pool, ComputeDtype::int8_dot).GFLOPs;
  const uint64_t llc = q.last_level_cache_bytes ? q.last_level_cache_bytes : last_level_cache_bytes();
  r.read_GBps = measure_read_bandwidth(pool, read_probe_bytes(llc), kReadProbeReps).best_GBps;
  r.source = RoofSource::measured_at_open;
  return r;
}

}  // namespace

Roofs cpu_roofs(const CpuRoofsQuery& q) {
  static std::once_flag once;
  static Roofs roofs;
  std::call_once(once, [&] { roofs = measure(q); });
  return roofs;
}

}  // namespace tessera::cpu
