#include "graph/cost_model.h"

#include <algorithm>

namespace tessera::graph {

namespace {

double bytes_at(const Value& v, int64_t rows) {
  if (v.rows == RowCount::fixed || v.desc.shape.rank == 0) return (double)v.desc.bytes();
  return (double)v.desc.bytes() / (double)std::max<int64_t>(1, v.desc.shape[0]) * (double)rows;
}

}  // namespace

OpCost estimate_cost(const Graph& g, const Node& n, int64_t rows) {
  OpCost c;
  for (ValueId in : n.inputs) {
    const Value& v = g.value(in);
    // A KV pool is read only as far as the context reaches; counted by attention, not here.
    // A folded RoPE table is read one row per token.
    if (v.kind == ValueKind::constant && v.desc.shape.rank > 0 && v.desc.shape[0] > 0)
      c.bytes += (double)v.desc.bytes() / (double)v.desc.shape[0] * (double)rows;
    else if (v.kind != ValueKind::kv_pool) c.bytes += bytes_at(v, rows);
  }
  for (ValueId out : n.outputs)
    if (g.value(out).aliases == kNoValue) c.bytes += bytes_at(g.value(out), rows);
  switch (n.op) {
    case OpKind::matmul:
    case OpKind::matmul_add:
    case OpKind::matmul_silu_mul:
    case OpKind::matmul_qkv:
    case OpKind::matmul_add_rms_norm:
    case OpKind::matmul_epilogue: {
      const auto& w = g.value(n.inputs[1]).desc;
      c.flops = 2.0 * (double)rows * (double)w.shape[0] * (double)w.shape[1];
      break;
    }
    default:
      // Elementwise and row ops: a few operations per element they write.
      for (ValueId out : n.outputs) c.flops += 4.0 * bytes_at(g.value(out), rows) / 4.0;
      break;
  }
  return c;
}

double roofline_us(const OpCost& c, const DeviceInfo& d) {
  const double mem_us = d.roofs.read_GBps > 0 ? c.bytes / (d.roofs.read_GBps * 1e3) : 0;
  const double peak = std::max(d.roofs.f32_GFLOPs, d.roofs.int8_GOPs);
  const double compute_us = peak > 0 ? c.flops / (peak * 1e3) : 0;
  return std::max(mem_us, compute_us);
}

int64_t parallel_items(double us, int64_t cores, const PoolOverhead& o) {
  if (us <= 0) return 0;
  cores = std::max<int64_t>(1, cores);
  if (us < o.round_trip_us * (double)cores) return 1;
  return std::clamp<int64_t>((int64_t)(us / o.min_item_us), cores, o.max_items_per_core * cores);
}

}  // namespace tessera::graph
