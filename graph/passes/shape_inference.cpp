// Shape inference: every computed value's shape, dtype and row kind are
// recomputed from its op's shape rule, in node order. A graph read from text
// or rewritten by hand gets the types its ops imply; a node whose inputs do
// not fit its op is an error naming it.
#include "graph/passes/passes.h"
#include "graph/shape_rules.h"

namespace tessera::graph::passes {

Status shape_inference(Graph& g, const PassContext&) {
  for (const Node& n : g.nodes) {
    auto outs = infer_outputs(g, n.op, n.params, n.inputs);
    if (!outs) return outs.status().with_context(n.label);
    if (outs->size() != n.outputs.size())
      return invalid_argument(n.label + ": " + std::string(name(n.op)) + " defines " + std::to_string(outs->size()) + " values, not " +
                              std::to_string(n.outputs.size()));
    for (size_t o = 0; o < outs->size(); ++o) {
      Value& v = g.value(n.outputs[o]);
      v.desc = (*outs)[o].desc;
      v.rows = (*outs)[o].rows;
    }
  }
  return Status::ok();
}

}  // namespace tessera::graph::passes
