#pragma once
// The CPU's roofs (read bandwidth, f32, bf16 and int8 peak), for the cost
// model that tiles matmuls and for `tessera devices`. Measured once per
// process by the probes `tessera bench` runs too (core/read_bandwidth.h,
// core/compute_roofs.h), on a pool of the backend's threads (~50 ms here): a
// streaming read of 4x the last-level cache (best of 3 passes), and an
// FMA, a bf16 dot and an int8 dot loop on every thread at once (best of 3).
// TESSERA_CPU_ROOFS=nominal gives fixed figures from the ISA and core count
// (same tiles on every run); TESSERA_CPU_ROOFS=off gives none (the tiling
// pass then keeps its defaults).
#include "core/hal/device_info.h"

namespace tessera::cpu {

struct CpuRoofsQuery {
  int threads = 1;                  // cores the pool uses
  uint32_t simd_width_bits = 128;   // of the kernels' ISA
  bool vnni = false;                // int8 dots in one instruction
  uint64_t last_level_cache_bytes = 0;
};

// Cached: the first call measures, later ones (any query) return the same figures.
Roofs cpu_roofs(const CpuRoofsQuery& q);

}  // namespace tessera::cpu
