#include "graph/memory_plan.h"

#include <algorithm>
#include <string>

namespace tessera::graph {

namespace {

constexpr uint64_t kAlign = 64;
uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

bool elementwise_in_place(OpKind op) {
  return op == OpKind::add || op == OpKind::silu_mul || op == OpKind::rope || op == OpKind::rms_norm;
}

bool lifetimes_overlap(const ValuePlacement& a, const ValuePlacement& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan plan_memory(const Graph& g, const std::vector<uint64_t>& bytes_of) {
  MemoryPlan plan;
  plan.values.resize(g.values.size());
  const int32_t end = (int32_t)g.nodes.size();

  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    auto& p = plan.values[i];
    if (v.kind != ValueKind::computed || v.aliases != kNoValue) continue;
    p.in_arena = true;
    p.bytes = align_up(bytes_of[i]);
    p.first = p.last = v.producer;
  }
  for (int32_t n = 0; n < end; ++n)
    for (ValueId in : g.nodes[(size_t)n].inputs) plan.values[(size_t)in].last = std::max(plan.values[(size_t)in].last, n);
  for (ValueId out : g.outputs) plan.values[(size_t)out].last = end;

  // Lower bound: the largest total of values that must coexist between two
  // nodes (defined at or before n, read after n). No plan, in place or not,
  // can hold them in fewer bytes.
  for (int32_t n = 0; n < end; ++n) {
    uint64_t live = 0;
    for (const auto& p : plan.values)
      if (p.in_arena && p.first <= n && n < p.last) live += p.bytes;
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, live);
  }

  // First fit in definition order; in place where an elementwise input dies here.
  std::vector<size_t> placed;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (ValueId out : node.outputs) {
      auto& p = plan.values[(size_t)out];
      if (!p.in_arena) continue;
      bool done = false;
      if (elementwise_in_place(node.op)) {
        for (ValueId in : node.inputs) {
          const auto& q = plan.values[(size_t)in];
          if (q.in_arena && q.last == (int32_t)n && q.bytes == p.bytes) {
            p.offset = q.offset;
            done = true;
            break;
          }
        }
      }
      if (!done) {
        // Intervals already taken during this value's lifetime, by offset.
        std::vector<std::pair<uint64_t, uint64_t>> busy;
        for (size_t j : placed) {
          const auto& q = plan.values[j];
          // An input dying at this node may not be reused unless in place (the kernel reads it while writing).
          if (lifetimes_overlap(p, q)) busy.emplace_back(q.offset, q.offset + q.bytes);
        }
        std::sort(busy.begin(), busy.end());
        uint64_t offset = 0;
        for (const auto& [b, e] : busy) {
          if (offset + p.bytes <= b) break;
          offset = std::max(offset, e);
        }
        p.offset = offset;
      }
      placed.push_back((size_t)out);
      plan.peak_bytes = std::max(plan.peak_bytes, p.offset + p.bytes);
    }
  }
  return plan;
}

Status verify_memory_plan(const Graph& g, const MemoryPlan& plan) {
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const auto& a = plan.values[i];
    if (!a.in_arena) continue;
    for (size_t j = i + 1; j < plan.values.size(); ++j) {
      const auto& b = plan.values[j];
      if (!b.in_arena || !lifetimes_overlap(a, b)) continue;
      const bool bytes_overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (!bytes_overlap) continue;
      // Allowed only for an in-place op: one value dies exactly where the other is born.
      const bool in_place = (a.last == b.first || b.last == a.first) && a.offset == b.offset;
      if (!in_place)
        return internal_error("memory plan: %" + std::to_string(i) + " and %" + std::to_string(j) +
                              " are live together and overlap in the arena");
    }
  }
  return Status::ok();
}

}  // namespace tessera::graph
