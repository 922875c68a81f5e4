#include "graph/ir.h"

namespace tessera::graph {

const char* to_string(ValueKind k) {
  switch (k) {
    case ValueKind::step_input: return "input";
    case ValueKind::weight: return "weight";
    case ValueKind::kv_pool: return "kv_pool";
    case ValueKind::computed: return "computed";
    case ValueKind::transfer: return "transfer";
    case ValueKind::constant: return "constant";
  }
  return "?";
}

OpQuery query_for(const Graph& g, const Node& n) {
  OpQuery q{n.op, DType::f32, DType::f32};
  q.params = n.params;
  for (ValueId in : n.inputs)
    if (g.value(in).kind == ValueKind::constant && g.value(in).rope_table) q.rope_table = true;
  for (ValueId in : n.inputs)
    if (g.value(in).kind == ValueKind::weight) {
      q.weight_dtype = g.value(in).desc.dtype;
      break;
    }
  for (ValueId in : n.inputs)
    if (g.value(in).kind == ValueKind::kv_pool) {
      q.kv_dtype = g.value(in).desc.dtype;
      break;
    }
  if (n.op == OpKind::rope || n.op == OpKind::rope_kv_append)
    q.rope_freq_factors = rope_freq_factors_input(g, n) != kNoValue;
  return q;
}

ValueId rope_freq_factors_input(const Graph& g, const Node& n) {
  const size_t first_extra = n.op == OpKind::rope ? 2 : n.op == OpKind::rope_kv_append ? 7 : n.inputs.size();
  for (size_t i = first_extra; i < n.inputs.size(); ++i)
    if (g.value(n.inputs[i]).kind != ValueKind::constant) return n.inputs[i];
  return kNoValue;
}

ValueId rope_table_input(const Graph& g, const Node& n) {
  const size_t first_extra = n.op == OpKind::rope ? 2 : n.op == OpKind::rope_kv_append ? 7 : n.inputs.size();
  for (size_t i = first_extra; i < n.inputs.size(); ++i)
    if (g.value(n.inputs[i]).kind == ValueKind::constant) return n.inputs[i];
  return kNoValue;
}

ValueId Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return (ValueId)values.size() - 1;
}

void compact_values(Graph& g) {
  std::vector<char> used(g.values.size(), 0);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].kind != ValueKind::computed) used[i] = 1;
  for (const Node& n : g.nodes) {
    for (ValueId v : n.inputs) used[(size_t)v] = 1;
    for (ValueId v : n.outputs) used[(size_t)v] = 1;
  }
  for (ValueId v : g.outputs) used[(size_t)v] = 1;
  // Weights, pools and constants nothing reads any more go too (a weight packed into another).
  std::vector<char> read(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (ValueId v : n.inputs) read[(size_t)v] = 1;
  for (size_t i = 0; i < g.values.size(); ++i)
    if ((g.values[i].kind == ValueKind::weight || g.values[i].kind == ValueKind::kv_pool ||
         g.values[i].kind == ValueKind::constant) && !read[i])
      used[i] = 0;
  std::vector<ValueId> new_id(g.values.size(), kNoValue);
  std::vector<Value> kept;
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (!used[i]) continue;
    new_id[i] = (ValueId)kept.size();
    kept.push_back(std::move(g.values[i]));
  }
  auto remap = [&](ValueId& v) { v = v == kNoValue ? kNoValue : new_id[(size_t)v]; };
  for (Value& v : kept) remap(v.aliases);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (ValueId& v : g.nodes[n].inputs) remap(v);
    for (ValueId& v : g.nodes[n].outputs) {
      remap(v);
      kept[(size_t)v].producer = (int32_t)n;
    }
  }
  for (ValueId& v : g.outputs) remap(v);
  g.values = std::move(kept);
}

}  // namespace tessera::graph
