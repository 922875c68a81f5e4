#pragma once
// The CPU primitives `tessera bench --op` times, one row of a table each:
// which flags it reads, how its sizes are checked, what it costs (FLOPs,
// bytes), the tensors one call touches, how they are filled, and the kernel
// call. engine/bench/op_bench.cpp owns the timing; adding an op is a row
// in op_table.cpp.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/compute_roofs.h"
#include "core/dtype.h"
#include "core/parallel.h"
#include "core/status.h"
#include "core/weight_layout.h"

namespace tessera {

// An op's sizes, in the terms: matmul y[n, m] = x[n, k] · w[m, k]ᵀ
// (m weight rows, k inputs, n tokens); row ops act on n rows of k; attention
// and kv_append on a sequence of ctx positions, q_len of them new.
struct OpShape {
  std::string op;
  DType dtype = DType::q4_K;  // matmul's weights, embedding's table
  int64_t m = 4096, k = 4096, n = 1;
  int32_t heads = 32, kv_heads = 8, head_dim = 128, ctx = 4096, q_len = 1;
  DType kv_dtype = DType::f32;
  bool batch_invariant = false;  // matmul: tile.batch_invariant (docs/backends.md, "Batch invariance")
  std::optional<WeightLayout> w_layout;  // matmul: the weight's layout; none: the CPU's preference
};

struct OpCostFigures {
  double flops = 0;  // multiply-add counted as 2; 0 for pure data movement
  double bytes = 0;  // the least a call must move: every input read once, every output written once
  ComputeDtype compute = ComputeDtype::f32_fma;
  std::string kernel;  // what runs, e.g. "q4_K_gemv__avx512vnni"
};

// The buffers of one call, in the order the row's tensors list them.
using OpTensors = std::span<std::byte* const>;

struct OpRow {
  const char* name;
  const char* sizes;  // the flags it reads, for --help and errors
  Status (*check)(const OpShape& s);
  OpCostFigures (*cost)(const OpShape& s);
  std::vector<uint64_t> (*tensor_bytes)(const OpShape& s);
  void (*fill)(const OpShape& s, OpTensors t, std::mt19937& gen);
  size_t (*workspace_bytes)(const OpShape& s, int threads);
  void (*run)(const OpShape& s, OpTensors t, void* workspace, ParallelFor& pf);
};

std::span<const OpRow> op_table();
const OpRow* find_op(const std::string& name);
std::string op_names();  // "matmul, attention, ..." for messages

}  // namespace tessera
