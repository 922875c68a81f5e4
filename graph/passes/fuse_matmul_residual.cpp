// Matmul epilogue: add(r, matmul(x, w)) -> matmul_add(x, w, r), when the
// product has no other reader. The fused node takes the add's place (x, w
// and r are all defined by then) and the add's value. Backends: any whose
// kernel table has matmul_add for the weight's dtype (cpu); others keep the
// two nodes.
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

Status fuse_matmul_residual(Graph& g, const PassContext& ctx) {
  const auto readers = readers_of(g);
  std::vector<char> dead(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& add = g.nodes[i];
    if (add.op != OpKind::add) continue;
    for (int side = 1; side >= 0; --side) {
      const ValueId product = add.inputs[(size_t)side];
      const int32_t m = g.value(product).producer;
      if (m < 0 || dead[(size_t)m] || g.nodes[(size_t)m].op != OpKind::matmul || !single_use(readers, product)) continue;
      const Node& mm = g.nodes[(size_t)m];
      if (!target_has(ctx, OpKind::matmul_add, g.value(mm.inputs[1]).desc.dtype)) continue;
      const ValueId residual = add.inputs[(size_t)(1 - side)];
      add.op = OpKind::matmul_add;
      add.params = NoParams{};
      add.inputs = {mm.inputs[0], mm.inputs[1], residual};
      if (!mm.label.empty()) add.label = mm.label + "+residual";
      dead[(size_t)m] = 1;
      break;
    }
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
