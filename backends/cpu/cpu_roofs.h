#pragma once
// The CPU's roofs (read bandwidth, f32 and int8 peak), for the cost model
// that tiles matmuls. Measured once per process by a short probe (~20-30 ms):
// a streaming read of a buffer larger than the last-level cache on every
// thread, and an FMA and an int8 dot loop on one core scaled by the cores;
// each the best of a few short runs, so that a neighbour's burst on a shared
// host lowers one run, not the figure.
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
