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

// What splitting an op over a thread pool costs (backends/cpu's pool:
// waking and joining a worker, taking an item off the shared counter).
struct PoolOverhead {
  double round_trip_us = 2.0;   // per core, once per op
  double min_item_us = 8.0;     // an item shorter than this spends too much of itself on the counter
  // The pool claims a shrinking share of what is left (guided), so small
  // items cost no counter traffic until the end, where they even out the
  // cores' finish; 4 a core left a tenth of a decode matmul to one core.
  int64_t max_items_per_core = 64;
};

// How many parallel items an op of `us` microseconds should be split into
// on `cores` cores: one when the whole op takes less than a round trip per
// core (splitting would cost more than it saves); otherwise as many as keep
// each item above min_item_us, between `cores` and max_items_per_core per
// core. 0 when `us` is 0 (no roofs to estimate with).
int64_t parallel_items(double us, int64_t cores, const PoolOverhead& o = {});

}  // namespace tessera::graph
