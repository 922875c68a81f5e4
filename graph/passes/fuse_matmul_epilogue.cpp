// Matmul epilogues: a matmul whose product feeds a chain of elementwise ops
// (bias_add, silu, gelu, add or mul with another tensor, silu_mul), each
// value of the chain read only by the next, becomes one `matmul_epilogue`
// whose program (register a0 the product) the kernel runs on each block of
// outputs while it is still in cache:
//   %y = matmul(%x, %w); %t = bias_add(%y, %b); %o = gelu(%t)
//     -> %o = matmul_epilogue(%x, %w, %b) {bias_add(a0, a1); gelu(t0)}
// It runs after fuse_matmul_residual, fuse_gate_up and fuse_residual_norm,
// so the patterns those have dedicated kernels for are theirs; on a llama
// graph it finds nothing left. The fused node stands where the chain's last
// op was (the chain's other operands are defined before their readers).
// Backends: any whose kernel table has matmul_epilogue for the weight's dtype (cpu).
#include "graph/passes/ew_chain.h"
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

Status fuse_matmul_epilogue(Graph& g, const PassContext& ctx) {
  const auto readers = readers_of(g);
  std::vector<char> dead(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (mm.op != OpKind::matmul || dead[i]) continue;
    if (!target_has(ctx, OpKind::matmul_epilogue, g.value(mm.inputs[1]).desc.dtype)) continue;
    ProgramBuilder pb;
    ValueId cur = mm.outputs[0];
    int cur_reg = pb.input(cur);  // a0: the product
    int budget = kEwMaxInstrs;
    std::vector<size_t> chain;
    std::vector<const Node*> in_order = {&mm};
    while (single_use(readers, cur)) {
      const size_t r = (size_t)readers[(size_t)cur][0];
      const Node& n = g.nodes[r];
      const int cost = ew_instr_count(n.op);
      if (dead[r] || cost == 0 || cost > budget) break;
      if (n.op == OpKind::bias_add && n.inputs[0] != cur) break;  // the chain's value as someone's bias: not a row
      auto reg = [&](ValueId v) { return v == cur ? cur_reg : pb.input(v); };
      const int a = reg(n.inputs[0]);
      const int b = n.inputs.size() < 2 ? 0 : reg(n.inputs[1]);
      cur_reg = pb.append(n, a, b);
      budget -= cost;
      chain.push_back(r);
      in_order.push_back(&n);
      cur = n.outputs[0];
    }
    if (chain.empty()) continue;
    std::vector<ValueId> inputs = {mm.inputs[0], mm.inputs[1]};
    for (size_t k = 1; k < pb.inputs().size(); ++k) inputs.push_back(pb.inputs()[k]);
    const std::string label = joined_label(in_order);
    Node& last = g.nodes[chain.back()];
    last.op = OpKind::matmul_epilogue;
    last.params = pb.finish();
    last.inputs = std::move(inputs);
    last.label = label;
    dead[i] = 1;
    for (size_t k = 0; k + 1 < chain.size(); ++k) dead[chain[k]] = 1;
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
