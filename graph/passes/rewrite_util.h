#pragma once
// What the rewriting passes share: who reads a value, and removing the
// nodes a fusion replaced. Internal to graph/passes.
#include <string>
#include <vector>

#include "graph/pass_manager.h"

namespace tessera::graph::passes {

// readers[v]: the nodes reading value v; a value the graph returns gets -1 among them.
std::vector<std::vector<int32_t>> readers_of(const Graph& g);

// True when v is read by exactly one node and not returned.
bool single_use(const std::vector<std::vector<int32_t>>& readers, ValueId v);

// Removes the marked nodes, fixes every producer index and drops orphaned values.
void erase_nodes(Graph& g, const std::vector<char>& dead);

// Whether the target runs `op` with weights of `weight_dtype` (always, without a kernel table).
bool target_has(const PassContext& ctx, OpKind op, DType weight_dtype);

// After a pass rebuilt g.nodes: every value's producer from the nodes, the
// values nothing defines or reads dropped (compact_values), and every shape
// recomputed (shape_inference).
Status settle_rebuilt_graph(Graph& g, const PassContext& ctx);

// A weight made at load by concatenating the rows of `parts` (same dtype and columns).
ValueId add_packed_weight(Graph& g, const std::vector<ValueId>& parts);

}  // namespace tessera::graph::passes
