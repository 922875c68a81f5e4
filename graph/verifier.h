#pragma once
// The verifier: what every graph must satisfy, checked after every pass in
// debug builds and in the tests, and on every graph `tessera ir --parse`
// reads. It checks
//   SSA        each computed value has one producing node, which precedes
//              every reader; inputs, weights and pools have none;
//   shapes     each node's outputs are what its op's shape rule infers;
//   aliases    outputs that update a bound buffer name that buffer;
//   weights    packed weights are the concatenation of same-typed weights;
//   memory     the arena plan at small and large buckets keeps every pair
//              of simultaneously live values apart.
// The first violation is returned, naming the node's label.
#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

Status verify(const Graph& g);

}  // namespace tessera::graph
