#include "graph/verifier.h"

#include <map>
#include <string>

#include "graph/constants.h"
#include "graph/memory_plan.h"
#include "graph/printer.h"
#include "graph/shape_rules.h"

namespace tessera::graph {

namespace {

std::string where(const Node& n) { return n.label.empty() ? std::string(name(n.op)) : n.label; }

Status verify_ssa(const Graph& g) {
  const int32_t n_values = (int32_t)g.values.size();
  std::vector<int32_t> producer(g.values.size(), -1);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    for (ValueId in : n.inputs) {
      if (in < 0 || in >= n_values) return invalid_argument("verify: " + where(n) + ": input %" + std::to_string(in) + " does not exist");
      const Value& v = g.value(in);
      if (v.kind == ValueKind::computed && (producer[(size_t)in] < 0))
        return invalid_argument("verify: " + where(n) + ": reads %" + std::to_string(in) + " before any node defines it");
    }
    if (n.outputs.empty()) return invalid_argument("verify: " + where(n) + ": a node must define a value");
    for (ValueId out : n.outputs) {
      if (out < 0 || out >= n_values) return invalid_argument("verify: " + where(n) + ": output %" + std::to_string(out) + " does not exist");
      if (g.value(out).kind != ValueKind::computed)
        return invalid_argument("verify: " + where(n) + ": defines %" + std::to_string(out) + ", which is an input, weight, pool or constant");
      if (producer[(size_t)out] >= 0)
        return invalid_argument("verify: " + where(n) + ": %" + std::to_string(out) + " is defined twice (SSA)");
      producer[(size_t)out] = (int32_t)ni;
      if (g.value(out).producer != (int32_t)ni)
        return internal_error("verify: " + where(n) + ": %" + std::to_string(out) + " does not name its producer");
    }
  }
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].kind == ValueKind::computed && producer[i] < 0)
      return invalid_argument("verify: computed value %" + std::to_string(i) + " has no producing node");
  if (g.outputs.empty()) return invalid_argument("verify: the graph returns nothing");
  for (ValueId v : g.outputs)
    if (v < 0 || v >= n_values) return invalid_argument("verify: returned value %" + std::to_string(v) + " does not exist");
  return Status::ok();
}

Status verify_types(const Graph& g) {
  for (const Node& n : g.nodes) {
    auto outs = infer_outputs(g, n.op, n.params, n.inputs);
    if (!outs) return outs.status().with_context("verify: " + where(n));
    if (outs->size() != n.outputs.size())
      return invalid_argument("verify: " + where(n) + ": " + std::string(name(n.op)) + " defines " + std::to_string(outs->size()) +
                              " values, the node lists " + std::to_string(n.outputs.size()));
    for (size_t o = 0; o < outs->size(); ++o) {
      Value expected;
      expected.desc = (*outs)[o].desc;
      expected.rows = (*outs)[o].rows;
      const Value& got = g.value(n.outputs[o]);
      // Symbolic rows carry a placeholder extent; the printed type is what must agree.
      if (print_type(expected) != print_type(got) || expected.desc.dtype != got.desc.dtype)
        return invalid_argument("verify: " + where(n) + ": output %" + std::to_string(n.outputs[o]) + " is " + print_type(got) +
                                "; the shape rule of " + std::string(name(n.op)) + " gives " + print_type(expected));
      const int a = aliased_input(n.op, (int)o);
      const ValueId want = a >= 0 ? n.inputs[(size_t)a] : kNoValue;
      if (got.aliases != want)
        return invalid_argument("verify: " + where(n) + ": output %" + std::to_string(n.outputs[o]) +
                                (want == kNoValue ? " aliases a buffer it does not update" : " must alias the pool it updates"));
      if (want != kNoValue && g.value(want).kind != ValueKind::kv_pool)
        return invalid_argument("verify: " + where(n) + ": updates %" + std::to_string(want) + ", which is not a KV pool");
    }
  }
  return Status::ok();
}

Status verify_weights(const Graph& g) {
  for (const Value& v : g.values) {
    if (v.layout != WeightLayout::rows) {
      if (v.kind != ValueKind::weight)
        return invalid_argument("verify: %" + std::to_string(&v - g.values.data()) + ": only weights have a layout");
      TS_TRY(check_weight_layout(v.layout, v.desc.dtype, v.desc.shape, "verify: '" + v.name + "'"));
    }
    if (v.packed_from.empty()) continue;
    if (v.kind != ValueKind::weight) return invalid_argument("verify: '" + v.name + "': only weights are packed");
    if (v.desc.shape.rank != 2 || v.packed_from.size() < 2)
      return invalid_argument("verify: '" + v.name + "': a packed weight is 2-D and made of two or more weights");
  }
  return Status::ok();
}

// Placement: all nodes placed or none; a computed value is read on the
// device that made it, except by a copy, which brings it from another; the
// nodes that touch one KV pool share a device (the pool is in its memory).
Status verify_placement(const Graph& g) {
  size_t placed = 0;
  for (const Node& n : g.nodes) placed += n.device.empty() ? 0 : 1;
  if (placed == 0) return Status::ok();
  std::map<ValueId, DeviceId> pool_device;
  for (const Node& n : g.nodes) {
    if (n.device.empty()) return invalid_argument("verify: " + where(n) + " has no device while other nodes do");
    for (ValueId in : n.inputs) {
      const Value& v = g.value(in);
      const ValueId pool = v.kind == ValueKind::kv_pool ? in : v.aliases;
      if (pool == kNoValue) continue;
      auto [it, fresh] = pool_device.try_emplace(pool, n.device);
      if (!fresh && it->second != n.device)
        return invalid_argument("verify: " + where(n) + " on " + n.device.to_string() + " uses KV pool '" + g.value(pool).name +
                                "', which another node uses on " + it->second.to_string());
    }
  }
  // Two devices of one backend (vulkan:0, vulkan:1) are as separate as two backends.
  for (const Node& n : g.nodes) {
    for (ValueId in : n.inputs) {
      const Value& v = g.value(in);
      if (v.kind != ValueKind::computed || v.aliases != kNoValue) continue;
      const DeviceId& made_on = g.nodes[(size_t)v.producer].device;
      if (n.op == OpKind::copy && made_on == n.device)
        return invalid_argument("verify: " + where(n) + " copies %" + std::to_string(in) + " to " + n.device.to_string() +
                                ", where it already is");
      if (n.op != OpKind::copy && made_on != n.device)
        return invalid_argument("verify: " + where(n) + " on " + n.device.to_string() + " reads %" + std::to_string(in) +
                                ", made on " + made_on.to_string() + ", without a copy");
    }
  }
  return Status::ok();
}

Status verify_constants(const Graph& g) {
  for (const Value& v : g.values) {
    if (v.rope_table && v.kind != ValueKind::constant)
      return invalid_argument("verify: '" + v.name + "': only constants have a recipe");
    if (v.kind == ValueKind::constant) TS_TRY(check_constant(v).with_context("verify"));
  }
  return Status::ok();
}

// Only a matmul's weight and an embedding's table may be a reordered weight.
Status verify_layout_readers(const Graph& g) {
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value& v = g.value(n.inputs[i]);
      if (v.layout == WeightLayout::rows || may_read_reordered_weight(n.op, i)) continue;
      return invalid_argument("verify: " + where(n) + ": reads '" + v.name + "' (layout=" + std::string(name(v.layout)) +
                              ") as input " + std::to_string(i) +
                              "; only a matmul's weight (input 1) or an embedding's table (input 0) may have a layout other than rows");
    }
  return Status::ok();
}

Status verify_memory(const Graph& g) {
  for (int64_t rows : {1, 64}) {
    TS_TRY(verify_memory_plan(g, plan_memory(g, value_bytes_at(g, rows))).with_context("verify: memory plan at " + std::to_string(rows) + " rows"));
  }
  return Status::ok();
}

}  // namespace

Status verify(const Graph& g) {
  TS_TRY(verify_ssa(g));
  TS_TRY(verify_constants(g));  // before the shape rules, which read a table's recipe
  TS_TRY(verify_types(g));
  TS_TRY(verify_weights(g));
  TS_TRY(verify_placement(g));
  TS_TRY(verify_layout_readers(g));
  return verify_memory(g);
}

}  // namespace tessera::graph
