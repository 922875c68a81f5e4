// Residual add + RMSNorm: the residual stream's sum and its normalization in
// one node that defines both,
//   s = add(a, b);              h = rms_norm(s, w) -> s, h = add_rms_norm(a, b, w)
//   s = matmul_add(x, W, r);    h = rms_norm(s, w) -> s, h = matmul_add_rms_norm(x, W, r, w)
// (the second after fuse_matmul_residual made the matmul epilogue). The sum
// keeps its value number, so its other readers (the next residual) are
// untouched; the fused node stands where the sum was defined (w is a weight,
// defined before every node). Backends: any whose kernel table has the
// fused op (cpu).
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

Status fuse_residual_norm(Graph& g, const PassContext& ctx) {
  std::vector<char> dead(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& norm = g.nodes[i];
    if (norm.op != OpKind::rms_norm || dead[i]) continue;
    const ValueId sum = norm.inputs[0];
    const int32_t p = g.value(sum).producer;
    if (p < 0 || g.value(norm.inputs[1]).kind != ValueKind::weight) continue;
    Node& prod = g.nodes[(size_t)p];
    if (prod.op != OpKind::add && prod.op != OpKind::matmul_add) continue;
    const OpKind fused = prod.op == OpKind::add ? OpKind::add_rms_norm : OpKind::matmul_add_rms_norm;
    const DType wt = fused == OpKind::add_rms_norm ? DType::f32 : g.value(prod.inputs[1]).desc.dtype;
    if (!target_has(ctx, fused, wt)) continue;
    prod.op = fused;
    prod.params = norm.params;
    prod.inputs.push_back(norm.inputs[1]);
    prod.outputs.push_back(norm.outputs[0]);
    g.value(norm.outputs[0]).producer = p;
    if (!prod.label.empty() && !norm.label.empty()) prod.label += "+" + norm.label.substr(norm.label.rfind('.') + 1);
    dead[i] = 1;
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
