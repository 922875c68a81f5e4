#include "graph/partition.h"

#include <algorithm>
#include <map>

namespace tessera::graph {

namespace {

// The value whose bytes `v` holds: through copies to their source, and
// through a pool update to the pool (a bound buffer every part can name).
ValueId storage_of(const Graph& g, ValueId v) {
  for (;;) {
    const Value& val = g.value(v);
    if (val.aliases != kNoValue) return val.aliases;
    if (val.kind != ValueKind::computed || val.producer < 0) return v;
    const Node& p = g.nodes[(size_t)val.producer];
    if (p.op != OpKind::copy) return v;
    v = p.inputs[0];
  }
}

}  // namespace

Expected<std::vector<GraphPart>> partition_by_device(const Graph& g) {
  // Which part each node runs in (-1: a copy).
  std::vector<int> part_of(g.nodes.size(), -1);
  std::vector<DeviceId> devices;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == OpKind::copy) continue;
    if (devices.empty() || devices.back() != n.device) devices.push_back(n.device);
    part_of[i] = (int)devices.size() - 1;
  }
  if (devices.empty()) return invalid_argument("partition: the graph has no nodes to run");
  auto producer_part = [&](ValueId v) { return part_of[(size_t)g.value(v).producer]; };

  // Values a part must hand on: read by a later part, or the logits.
  std::vector<std::vector<ValueId>> exports(devices.size());
  auto export_value = [&](int part, ValueId v) {
    if (std::find(exports[(size_t)part].begin(), exports[(size_t)part].end(), v) == exports[(size_t)part].end())
      exports[(size_t)part].push_back(v);
  };
  if (g.outputs.empty()) return invalid_argument("partition: the graph returns nothing");
  const ValueId logits = storage_of(g, g.outputs[0]);
  if (g.value(logits).kind != ValueKind::computed) return invalid_argument("partition: the graph returns a value no node computes");
  const int logits_part = producer_part(logits);
  export_value(logits_part, logits);  // first, so it is the part's outputs[0]
  for (size_t k = 1; k < g.outputs.size(); ++k) {
    const ValueId v = storage_of(g, g.outputs[k]);
    if (g.value(v).kind != ValueKind::computed) return invalid_argument("partition: the graph returns a value no node computes");
    export_value(producer_part(v), v);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (part_of[i] < 0) continue;
    for (ValueId in : g.nodes[i].inputs) {
      const ValueId s = storage_of(g, in);
      if (g.value(s).kind == ValueKind::computed && producer_part(s) != part_of[i]) export_value(producer_part(s), s);
    }
  }

  std::vector<GraphPart> parts(devices.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    GraphPart& part = parts[p];
    part.device = devices[p];
    part.graph.name = g.name + (parts.size() > 1 ? "." + std::to_string(p) : "");
    std::map<ValueId, ValueId> local;  // whole-graph id -> part id
    auto bring = [&](ValueId v) -> ValueId {
      const ValueId s = storage_of(g, v);
      if (auto it = local.find(s); it != local.end()) return it->second;
      Value copy = g.value(s);
      if (copy.kind == ValueKind::computed) {
        // Made by an earlier part (ours are in `local` already): bound here as a transfer.
        const int src = producer_part(s);
        if (src >= (int)p) return kNoValue;
        copy.kind = ValueKind::transfer;
        copy.name = "transfer.%" + std::to_string(s);
        copy.producer = -1;
        const ValueId id = part.graph.add_value(std::move(copy));
        part.inputs.push_back({id, src, kNoValue});
        // The source's id in its part is known once that part is built (it is earlier).
        const GraphPart& sp = parts[(size_t)src];
        for (size_t o = 0; o < exports[(size_t)src].size(); ++o)
          if (exports[(size_t)src][o] == s) part.inputs.back().src_value = sp.graph.outputs[o];
        return local[s] = id;
      }
      copy.producer = -1;
      return local[s] = part.graph.add_value(std::move(copy));
    };
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (part_of[i] != (int)p) continue;
      Node n = g.nodes[i];
      for (ValueId& in : n.inputs) {
        in = bring(in);
        if (in == kNoValue) return internal_error("partition: " + n.label + " reads a value of a later part");
      }
      for (ValueId& out : n.outputs) {
        Value v = g.value(out);
        v.producer = (int32_t)part.graph.nodes.size();
        if (v.aliases != kNoValue) v.aliases = bring(v.aliases);
        const ValueId whole = out;
        out = part.graph.add_value(std::move(v));
        local[whole] = out;
      }
      part.graph.nodes.push_back(std::move(n));
    }
    for (ValueId v : exports[p]) part.graph.outputs.push_back(local.at(v));
    for (ValueId out : g.outputs) {
      const ValueId v = storage_of(g, out);
      const auto at = std::find(exports[p].begin(), exports[p].end(), v);
      part.returns.push_back(producer_part(v) == (int)p && at != exports[p].end() ? (int)(at - exports[p].begin()) : -1);
    }
  }
  for (const GraphPart& part : parts)
    for (const GraphPart::Input& in : part.inputs)
      if (in.src_value == kNoValue) return internal_error("partition: a transfer has no source value");
  return parts;
}

}  // namespace tessera::graph
