#pragma once
// A roofline cost model: each op's FLOPs and bytes moved at a number of
// rows, and the time that takes at a device's roofs (the slower of compute
// and memory). Tiling asks it; bench reports measured figures beside it.
#include "core/hal/device_info.h"
#include "graph/ir.h"

namespace tessera::graph {

struct OpCost {
  double flops = 0;  // multiply-add counted as 2
  double bytes = 0;  // weights once, activations in and out
};

// The cost of node n when its symbolic rows are `rows`.
OpCost estimate_cost(const Graph& g, const Node& n, int64_t rows);

// Microseconds at the device's roofs; 0 when it states none.
double roofline_us(const OpCost& c, const DeviceInfo& d);

}  // namespace tessera::graph
