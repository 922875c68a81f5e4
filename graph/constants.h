#pragma once
// Constant values (ValueKind::constant): data that depends only on the
// recipe recorded in the IR, made once when a model is loaded. Today the one
// recipe is rope_table (RoPE's cos/sin per position, see fold_constants).
#include <cstddef>
#include <vector>

#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

// The shape a constant's recipe makes; an error names the constant and the field.
Expected<TensorDesc> constant_desc(const Value& v);

// A constant's declared type is what its recipe makes (the verifier's rule).
Status check_constant(const Value& v);

// The constant's bytes, computed with kernels/reference (rope_table), so a
// kernel reading them computes bit for bit what it does on the fly.
Expected<std::vector<std::byte>> materialize_constant(const Value& v);

}  // namespace tessera::graph
