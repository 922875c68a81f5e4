#pragma once
// Lowering: a Graph and a shape bucket become a Plan — ordered dispatches,
// every buffer sized, every activation at its planned arena offset.
#include "core/hal/plan.h"
#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

Expected<Plan> lower(const Graph& g, const ShapeBucket& bucket);

}  // namespace tessera::graph
