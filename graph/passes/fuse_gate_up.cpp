// Horizontal fusion of the FFN gate and up projections, with the SiLU gating
// fused behind them:
//   silu_mul(matmul(h, w_gate), matmul(h, w_up)) -> matmul_silu_mul(h, w_gate+w_up)
// where w_gate+w_up is a new weight whose rows are w_gate's then w_up's,
// recorded in the IR (pack=concat_rows(...)) and made once at load. One
// pass over h and one dispatch instead of three; the GEMV reads one
// contiguous weight. Backends: any whose kernel table has matmul_silu_mul
// for the weight dtype (cpu; vulkan, whose matmul_silu_mul is the two
// matmuls' and silu_mul's dispatches).
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

Status fuse_gate_up(Graph& g, const PassContext& ctx) {
  const auto readers = readers_of(g);
  std::vector<char> dead(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& act = g.nodes[i];
    if (act.op != OpKind::silu_mul) continue;
    const ValueId gate = act.inputs[0], up = act.inputs[1];
    const int32_t mg = g.value(gate).producer, mu = g.value(up).producer;
    if (mg < 0 || mu < 0 || mg == mu) continue;
    const Node& ng = g.nodes[(size_t)mg];
    const Node& nu = g.nodes[(size_t)mu];
    if (ng.op != OpKind::matmul || nu.op != OpKind::matmul || ng.inputs[0] != nu.inputs[0]) continue;
    if (!single_use(readers, gate) || !single_use(readers, up)) continue;
    const Value& wg = g.value(ng.inputs[1]);
    const Value& wu = g.value(nu.inputs[1]);
    if (wg.kind != ValueKind::weight || wu.kind != ValueKind::weight || wg.desc.dtype != wu.desc.dtype ||
        !(wg.desc.shape == wu.desc.shape) || !wg.packed_from.empty() || !wu.packed_from.empty())
      continue;
    if (!target_has(ctx, OpKind::matmul_silu_mul, wg.desc.dtype)) continue;
    const ValueId h = ng.inputs[0];
    const std::string label = ng.label + "+" + nu.label.substr(nu.label.rfind('.') + 1) + "+silu";
    const ValueId packed = add_packed_weight(g, {ng.inputs[1], nu.inputs[1]});
    Node& fused = g.nodes[i];  // add_packed_weight does not touch nodes
    fused.op = OpKind::matmul_silu_mul;
    fused.inputs = {h, packed};
    fused.label = label;
    dead[(size_t)mg] = dead[(size_t)mu] = 1;
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
