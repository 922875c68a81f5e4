#include "graph/passes/rewrite_util.h"

#include "graph/passes/passes.h"

namespace tessera::graph::passes {

std::vector<std::vector<int32_t>> readers_of(const Graph& g) {
  std::vector<std::vector<int32_t>> r(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ValueId v : g.nodes[n].inputs) r[(size_t)v].push_back((int32_t)n);
  for (ValueId v : g.outputs) r[(size_t)v].push_back(-1);
  return r;
}

bool single_use(const std::vector<std::vector<int32_t>>& readers, ValueId v) {
  return readers[(size_t)v].size() == 1 && readers[(size_t)v][0] >= 0;
}

void erase_nodes(Graph& g, const std::vector<char>& dead) {
  std::vector<Node> kept;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (dead[n]) {
      for (ValueId v : g.nodes[n].outputs)
        if (g.value(v).producer == (int32_t)n) g.value(v).producer = -1;
      continue;
    }
    kept.push_back(std::move(g.nodes[n]));
  }
  g.nodes = std::move(kept);
  // An orphaned computed value (its node gone, nobody taking it over) has
  // producer -1 and no reader left; compact_values drops it.
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ValueId v : g.nodes[n].outputs) g.value(v).producer = (int32_t)n;
  compact_values(g);
}

bool target_has(const PassContext& ctx, OpKind op, DType weight_dtype) {
  if (!ctx.kernels) return true;
  return ctx.kernels->query(OpQuery{op, DType::f32, weight_dtype}).supported;
}

ValueId add_packed_weight(Graph& g, const std::vector<ValueId>& parts) {
  Value v;
  v.kind = ValueKind::weight;
  int64_t rows = 0;
  for (ValueId p : parts) {
    const Value& w = g.value(p);
    v.name += (v.name.empty() ? "" : "+") + w.name;
    v.packed_from.push_back(w.name);
    rows += w.desc.shape[0];
  }
  const Value& first = g.value(parts[0]);
  v.desc = TensorDesc::contiguous(first.desc.dtype, Shape{rows, first.desc.shape[1]});
  return g.add_value(std::move(v));
}

Status settle_rebuilt_graph(Graph& g, const PassContext& ctx) {
  for (Value& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId o : g.nodes[i].outputs) g.value(o).producer = (int32_t)i;
  compact_values(g);
  return shape_inference(g, ctx);
}

}  // namespace tessera::graph::passes
