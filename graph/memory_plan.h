#pragma once
// Memory planning: every computed value gets an offset in one arena, from
// its lifetime in the node order. Values whose lifetimes do not overlap may
// share bytes; an elementwise op may write over an input that dies at it.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

struct ValuePlacement {
  bool in_arena = false;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int32_t first = 0, last = 0;  // node indices: defined at `first`, last read at `last`
};

struct MemoryPlan {
  std::vector<ValuePlacement> values;  // indexed by ValueId
  uint64_t peak_bytes = 0;
  uint64_t lower_bound_bytes = 0;  // the largest total of values that must coexist while one node runs
};

// `bytes_of(id)` is the size of a computed value at the bucket being planned.
MemoryPlan plan_memory(const Graph& g, const std::vector<uint64_t>& bytes_of);

// Bytes of every value when the symbolic rows (T and R) are `rows`.
std::vector<uint64_t> value_bytes_at(const Graph& g, int64_t rows);

// The plan as comment lines for the printed IR: peak, lower bound, and each
// arena value's offset, size and lifetime (node indices).
std::string describe(const Graph& g, const MemoryPlan& plan);

// Checks that no two simultaneously live values overlap; an error names both.
Status verify_memory_plan(const Graph& g, const MemoryPlan& plan);

}  // namespace tessera::graph
