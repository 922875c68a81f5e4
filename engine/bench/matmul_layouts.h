#pragma once
// The measurement behind the CPU's preferred weight layout (docs/performance.md):
// the quantized matmul kernel on the standard layout and on rows_x4, same
// weights, same x, timed alternately so that both see the same machine noise.
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"

namespace tessera {

struct MatmulLayoutCase {
  DType dtype = DType::q8_0;
  int64_t m = 1, n = 4096, k = 4096;
  double rows_ms = 0, x4_ms = 0;          // medians
  double rows_min_ms = 0, x4_min_ms = 0;  // fastest runs: less swayed by other load on a shared host
  double speedup() const { return x4_ms > 0 ? rows_ms / x4_ms : 0; }
  double min_speedup() const { return x4_min_ms > 0 ? rows_min_ms / x4_min_ms : 0; }
};

// Every (dtype, shape) of llama-7B's projections, m = 1 and 64, for q8_0 and
// q4_0; `reps` timed runs of each layout after one warm-up of each.
std::vector<MatmulLayoutCase> bench_matmul_layouts(ParallelFor& pf, int reps = 9);

}  // namespace tessera
