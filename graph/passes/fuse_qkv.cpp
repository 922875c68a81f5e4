// Horizontal fusion of the attention projections: three matmuls of one input
// x, the second and third with the same row count (K and V),
//   q = matmul(x, wq); k = matmul(x, wk); v = matmul(x, wv)
// -> q, k, v = matmul_qkv(x, wq+wk+wv) {q_rows, kv_rows}
// over a weight packed once at load (pack=concat_rows(...) in the IR). x is
// quantized once and read by one dispatch. The fused node stands where the
// first projection stood. Backends: any whose kernel table has matmul_qkv
// for the weight dtype (cpu; vulkan, whose matmul_qkv is the three matmuls'
// dispatches over the packed weight's rows).
#include <map>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

Status fuse_qkv(Graph& g, const PassContext& ctx) {
  std::map<ValueId, std::vector<int32_t>> matmuls_of;  // x -> the matmul nodes reading it, in order
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op == OpKind::matmul && g.value(g.nodes[i].inputs[1]).kind == ValueKind::weight)
      matmuls_of[g.nodes[i].inputs[0]].push_back((int32_t)i);
  std::vector<char> dead(g.nodes.size(), 0);
  for (const auto& [x, ms] : matmuls_of) {
    if (ms.size() != 3) continue;
    const Value& wq = g.value(g.nodes[(size_t)ms[0]].inputs[1]);
    const Value& wk = g.value(g.nodes[(size_t)ms[1]].inputs[1]);
    const Value& wv = g.value(g.nodes[(size_t)ms[2]].inputs[1]);
    if (wq.desc.dtype != wk.desc.dtype || wk.desc.dtype != wv.desc.dtype || !(wk.desc.shape == wv.desc.shape) ||
        wq.desc.shape[1] != wk.desc.shape[1] || !wq.packed_from.empty() || !wk.packed_from.empty() ||
        !wv.packed_from.empty())
      continue;
    if (!target_has(ctx, OpKind::matmul_qkv, wq.desc.dtype)) continue;
    const QkvSplitParams split{(int32_t)wq.desc.shape[0], (int32_t)wk.desc.shape[0]};
    const ValueId packed = add_packed_weight(g, {g.nodes[(size_t)ms[0]].inputs[1], g.nodes[(size_t)ms[1]].inputs[1],
                                                 g.nodes[(size_t)ms[2]].inputs[1]});
    Node& first = g.nodes[(size_t)ms[0]];
    std::string label = first.label;
    if (const size_t dot = label.rfind('.'); dot != std::string::npos) label = label.substr(0, dot + 1) + "attn_qkv";
    first.op = OpKind::matmul_qkv;
    first.params = split;
    first.inputs = {x, packed};
    first.outputs = {first.outputs[0], g.nodes[(size_t)ms[1]].outputs[0], g.nodes[(size_t)ms[2]].outputs[0]};
    first.label = label;
    for (ValueId o : first.outputs) g.value(o).producer = ms[0];
    dead[(size_t)ms[1]] = dead[(size_t)ms[2]] = 1;
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
