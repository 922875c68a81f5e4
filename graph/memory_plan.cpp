#include "graph/memory_plan.h"

#include <algorithm>
#include <string>

namespace tessera::graph {

namespace {

constexpr uint64_t kAlign = 64;
uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

bool elementwise_in_place(OpKind op) {
  return op == OpKind::add || op == OpKind::silu_mul || op == OpKind::rope || op == OpKind::rms_norm || op == OpKind::mul ||
         op == OpKind::silu || op == OpKind::gelu || op == OpKind::bias_add || op == OpKind::head_rms_norm || op == OpKind::gelu_mul ||
         op == OpKind::scale || op == OpKind::softcap || op == OpKind::all_reduce || op == OpKind::send ||
         op == OpKind::elementwise ||  // the last instruction writes each element after every read of it
         op == OpKind::rope_kv_append;  // its rotated q may take q's place; the kernel appends K and V first
}

bool lifetimes_overlap(const ValuePlacement& a, const ValuePlacement& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Whether a and b may share bytes at the same offset: an elementwise node's
// output over one of its inputs, of the same size, that dies at that node.
bool in_place_pair(const Graph& g, const MemoryPlan& plan, ValueId a, ValueId b) {
  const auto& pa = plan.values[(size_t)a];
  const auto& pb = plan.values[(size_t)b];
  if (pa.bytes != pb.bytes) return false;
  auto output_over_input = [&](ValueId out, ValueId in) {
    const int32_t n = g.value(out).producer;
    if (n < 0 || !elementwise_in_place(g.nodes[(size_t)n].op) || plan.values[(size_t)in].last != n) return false;
    for (ValueId x : g.nodes[(size_t)n].inputs)
      if (x == in) return true;
    return false;
  };
  return output_over_input(a, b) || output_over_input(b, a);
}

// Greedy by size: the largest values first (long-lived first among equals),
// each at the lowest offset free during its lifetime, or exactly on an
// in-place partner. Big buffers (the logits) go in before small ones can
// fragment the arena under them.
void place_by_size(const Graph& g, MemoryPlan& plan) {
  std::vector<ValueId> order;
  for (size_t i = 0; i < plan.values.size(); ++i)
    if (plan.values[i].in_arena) order.push_back((ValueId)i);
  std::stable_sort(order.begin(), order.end(), [&](ValueId a, ValueId b) {
    const auto& pa = plan.values[(size_t)a];
    const auto& pb = plan.values[(size_t)b];
    if (pa.bytes != pb.bytes) return pa.bytes > pb.bytes;
    return pa.last - pa.first > pb.last - pb.first;
  });
  std::vector<ValueId> placed;
  for (ValueId v : order) {
    auto& p = plan.values[(size_t)v];
    std::vector<ValueId> rivals, partners;
    std::vector<uint64_t> candidates = {0};
    for (ValueId u : placed) {
      const auto& q = plan.values[(size_t)u];
      if (!lifetimes_overlap(p, q)) continue;
      rivals.push_back(u);
      if (in_place_pair(g, plan, u, v)) {
        partners.push_back(u);
        candidates.push_back(q.offset);
      }
      candidates.push_back(q.offset + q.bytes);
    }
    std::sort(candidates.begin(), candidates.end());
    for (uint64_t off : candidates) {
      bool ok = true;
      for (ValueId u : rivals) {
        const auto& q = plan.values[(size_t)u];
        const bool overlap = off < q.offset + q.bytes && q.offset < off + p.bytes;
        const bool partner = std::find(partners.begin(), partners.end(), u) != partners.end();
        if (overlap && !(partner && q.offset == off)) {
          ok = false;
          break;
        }
      }
      if (ok) {
        p.offset = off;
        break;
      }
    }
    placed.push_back(v);
    plan.peak_bytes = std::max(plan.peak_bytes, p.offset + p.bytes);
  }
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

  // Lower bound: the largest total of values that must coexist while one
  // node runs: those live across it, its inputs and its outputs (a kernel
  // reads the ones while it writes the others), less what an in-place op
  // may share (an output over an input of its size that dies there). No
  // plan can hold them in fewer bytes.
  for (int32_t n = 0; n < end; ++n) {
    uint64_t live = 0;
    for (const auto& p : plan.values)
      if (p.in_arena && p.first <= n && n <= p.last) live += p.bytes;
    const Node& node = g.nodes[(size_t)n];
    if (elementwise_in_place(node.op)) {
      std::vector<char> shared(node.inputs.size(), 0);
      for (ValueId out : node.outputs) {
        const auto& o = plan.values[(size_t)out];
        if (!o.in_arena) continue;
        for (size_t k = 0; k < node.inputs.size(); ++k) {
          const auto& q = plan.values[(size_t)node.inputs[k]];
          if (!shared[k] && q.in_arena && q.last == n && q.bytes == o.bytes) {
            shared[k] = 1;
            live -= o.bytes;
            break;
          }
        }
      }
    }
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, live);
  }

  // Two strategies; the plan keeps whichever peaks lower.
  MemoryPlan by_size = plan;
  place_by_size(g, by_size);

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
  return by_size.peak_bytes < plan.peak_bytes ? by_size : plan;
}

std::vector<uint64_t> value_bytes_at(const Graph& g, int64_t rows) {
  std::vector<uint64_t> bytes(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    TensorDesc d = g.values[i].desc;
    if (g.values[i].rows != RowCount::fixed && d.shape.rank > 0) d.shape[0] = rows;
    bytes[i] = TensorDesc::contiguous(d.dtype, d.shape).bytes();
  }
  return bytes;
}

std::string describe(const Graph&, const MemoryPlan& plan) {
  std::string s = "// memory plan: peak " + std::to_string(plan.peak_bytes) + " B, lower bound " +
                  std::to_string(plan.lower_bound_bytes) + " B\n";
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const auto& p = plan.values[i];
    if (!p.in_arena) continue;
    s += "//   %" + std::to_string(i) + " offset " + std::to_string(p.offset) + ", " + std::to_string(p.bytes) +
         " B, live nodes " + std::to_string(p.first) + ".." + std::to_string(p.last) + "\n";
  }
  return s;
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
