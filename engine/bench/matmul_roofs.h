#pragma once
// The CPU's quantized GEMV against the machine's read roof, measured in the
// same run (docs/performance.md): decode reads every weight byte once per
// token, so weight bytes / time against a streaming read is the kernel's
// share of what memory allows.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"

namespace tessera {

struct MatmulRoofCase {
  DType dtype = DType::q8_0;
  std::string kernel;  // matmul_kernel_name, e.g. "q4_K_gemv__avx512vnni"
  int64_t m = 1, n = 4096, k = 14336;
  uint64_t weight_bytes = 0;
  double median_ms = 0, min_ms = 0;
  double roof_GBps = 0;      // median of the streaming reads alternated with the runs
  double share_of_roof = 0;  // median over runs of (run's GB/s) / (its neighbouring read's GB/s)
  double GBps() const { return median_ms > 0 ? (double)weight_bytes / median_ms / 1e6 : 0; }
};

// GEMV (m = 1) of n x k weights for each quantized dtype (q8_0, q4_0, q4_1,
// q5_0, q5_1, iq4_nl, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs), `reps` timed runs after one warm-up. Each run
// reads a different copy of the weights (copies enough to fill 4x the last
// level cache), so every run streams its weights from memory as decode does,
// and each is paired with a streaming read of as many bytes from a buffer of
// that size (alternating which goes first), so that a GEMV and its roof see
// the same load from the rest of the machine.
// Random codes and scales of block type t for n rows of k, the f16 scales
// valid and modest: the kernels' speed depends on neither, but NaNs or
// denormals would be no fair test.
std::vector<std::byte> random_blocks(DType t, int64_t n, int64_t k, std::mt19937& gen);
// Any weight dtype: block types as random_blocks; plain types (f32, f16,
// bf16) random values in [-0.05, 0.05] encoded with core's quantize_row.
std::vector<std::byte> random_weights(DType t, int64_t n, int64_t k, std::mt19937& gen);

std::vector<MatmulRoofCase> bench_matmul_roofs(ParallelFor& pf, int64_t n, int64_t k, int reps);

}  // namespace tessera
