#pragma once
// The CPU's compute roofs, probed: the rate of the multiply-add each dtype
// of the CPU kernels runs in, on every thread of a pool at once. One module,
// used by the CPU backend at device open (backends/cpu/cpu_roofs.cpp) and by
// `tessera bench --op` (engine/bench/op_bench.cpp), so both report the same
// figures. Each probe is a loop of independent multiply-add chains in
// registers (no memory traffic), the best of a few runs of ~1 ms, so that a
// neighbour's burst on a shared host lowers one run, not the figure.
#include <cstdint>
#include <string_view>

#include "core/parallel.h"

namespace tessera {

// What a kernel multiplies in: f32 FMA, bf16 pair dots into f32
// (vdpbf16ps), u8 x s8 dots of four into i32 (vpdpbusd; AVX2 vpmaddubsw).
enum class ComputeDtype : uint8_t { f32_fma, bf16_dot, int8_dot };
std::string_view name(ComputeDtype d);  // "f32", "bf16", "int8"

struct ComputeRoof {
  ComputeDtype dtype = ComputeDtype::f32_fma;
  double GFLOPs = 0;           // multiply-add counted as 2; 0 when the CPU has no such instruction
  const char* kernel = "none";  // the probe's loop: "avx512 vfmadd", "avx512 vdpbf16ps", "none", ...
};

// One probe: `runs` timed runs after a warm-up, each every thread of pf
// running the loop; the best rate.
ComputeRoof measure_compute_roof(ParallelFor& pf, ComputeDtype d, int runs = 3);

}  // namespace tessera
