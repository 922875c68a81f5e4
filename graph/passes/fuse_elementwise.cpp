// Elementwise-chain fusion: a root elementwise op (add, mul, silu, gelu,
// bias_add, silu_mul) and the single-use elementwise producers above it, up
// to kEwMaxInstrs instructions, become one `elementwise` node whose program
// computes the same values in one pass over the rows:
//   %t = bias_add(%x, %b); %g = gelu(%t); %o = mul(%g, %u)
//     -> %o = elementwise(%x, %b, %u) {bias_add(a0, a1); gelu(t0); mul(t1, a2)}
// Roots are taken last node first, so each chain is grown from its final op;
// a producer read twice, or returned, stays a node of its own (its value is
// needed), as does anything past the instruction budget (it becomes a chain of
// its own). A lone op stays itself. The fused node stands where the root was
// (every input it reads is defined before that). Backends: any whose kernel
// table has `elementwise` (cpu).
#include <functional>

#include "graph/passes/ew_chain.h"
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

Status fuse_elementwise(Graph& g, const PassContext& ctx) {
  if (!target_has(ctx, OpKind::elementwise, DType::f32)) return Status::ok();
  const auto readers = readers_of(g);
  std::vector<char> dead(g.nodes.size(), 0);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (dead[i] || ew_instr_count(g.nodes[i].op) == 0) continue;
    int budget = kEwMaxInstrs - ew_instr_count(g.nodes[i].op);
    ProgramBuilder pb;
    std::vector<size_t> absorbed;
    std::vector<const Node*> in_order;
    // The register holding v: the program of its producer, when that can be
    // absorbed, else an input. Operands left to right, so instructions come in
    // an order the unfused graph could have run them.
    std::function<int(const Node&)> expand;
    auto operand = [&](ValueId v) {
      const int32_t p = g.value(v).producer;
      if (p >= 0 && !dead[(size_t)p] && single_use(readers, v)) {
        const int cost = ew_instr_count(g.nodes[(size_t)p].op);
        if (cost > 0 && cost <= budget) {
          budget -= cost;
          absorbed.push_back((size_t)p);
          return expand(g.nodes[(size_t)p]);
        }
      }
      return pb.input(v);
    };
    expand = [&](const Node& n) {
      const int a = operand(n.inputs[0]);
      // A bias is one row: always an input register, never a full-size temporary.
      const int b = n.inputs.size() < 2 ? 0 : n.op == OpKind::bias_add ? pb.input(n.inputs[1]) : operand(n.inputs[1]);
      in_order.push_back(&n);
      return pb.append(n, a, b);
    };
    expand(g.nodes[i]);
    if (absorbed.empty()) continue;
    Node& root = g.nodes[i];
    const std::string label = joined_label(in_order);
    root.op = OpKind::elementwise;
    root.params = pb.finish();
    root.inputs = pb.inputs();
    root.label = label;
    for (size_t p : absorbed) dead[p] = 1;
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
