// Dead-code elimination: a node stays if the graph returns one of its values,
// a kept node reads one, or it writes a bound buffer (the KV append ops).
// Weights and values nothing reads any more are dropped with it.
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

Status dead_code_elimination(Graph& g, const PassContext&) {
  std::vector<char> live_value(g.values.size(), 0), dead(g.nodes.size(), 1);
  for (ValueId v : g.outputs) live_value[(size_t)v] = 1;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool live = has_side_effects(n.op);
    for (ValueId v : n.outputs) live = live || live_value[(size_t)v];
    if (!live) continue;
    dead[i] = 0;
    for (ValueId v : n.inputs) live_value[(size_t)v] = 1;
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
