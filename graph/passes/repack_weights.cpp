// Weight repacking: each matmul weight gets the block order the target's
// kernels read fastest (KernelTable::preferred_weight_layout), recorded on
// the weight ({layout=rows_x16}) and made once at load by ModelRunner. A
// tied embedding table that is also the classifier takes the classifier's
// layout where the target's embedding reads it (one copy for both readers;
// the lookup is a few rows a step, the classifier every row of it), else
// rows for both. --weight-layout replaces the preference wherever the
// target's kernel reads the layout asked for. Without a kernel table
// (printing, tests) nothing changes.
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

namespace {

// The layout every matmul reading weight w as its weight prefers (or reads,
// when one is asked for), if every other reader reads it too (an embedding
// reading it as its table); rows when they disagree, when a reader cannot
// read it, or when w is a graph output.
WeightLayout agreed_layout(const Graph& g, ValueId w, const std::vector<int32_t>& readers, const KernelTable& kernels,
                           std::optional<WeightLayout> asked) {
  const Value& v = g.value(w);
  std::optional<WeightLayout> agreed;
  std::vector<LayoutQuery> others;  // readers that must read what the matmuls agree on
  for (int32_t r : readers) {
    if (r < 0) return WeightLayout::rows;  // returned as a graph output
    const Node& n = g.nodes[(size_t)r];
    const LayoutQuery q{n.op, v.desc.dtype, v.desc.shape};
    bool as_weight = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] != w) continue;
      if (!may_read_reordered_weight(n.op, i)) return WeightLayout::rows;
      if (is_matmul_family(n.op)) as_weight = true;
      else others.push_back(q);
    }
    if (!as_weight) continue;
    WeightLayout l = kernels.preferred_weight_layout(q);
    if (asked) l = kernels.reads_weight_layout(q, *asked) ? *asked : WeightLayout::rows;
    if (agreed && *agreed != l) return WeightLayout::rows;
    agreed = l;
  }
  const WeightLayout l = agreed.value_or(WeightLayout::rows);
  for (const LayoutQuery& q : others)
    if (!kernels.reads_weight_layout(q, l)) return WeightLayout::rows;
  return l;
}

}  // namespace

Status repack_weights(Graph& g, const PassContext& ctx) {
  if (!ctx.kernels) return Status::ok();
  const auto readers = readers_of(g);
  for (size_t i = 0; i < g.values.size(); ++i) {
    Value& v = g.values[i];
    if (v.kind != ValueKind::weight || readers[i].empty()) continue;
    const WeightLayout l = agreed_layout(g, (ValueId)i, readers[i], *ctx.kernels, ctx.weight_layout_override);
    // A preference the weight cannot hold (a backend's bug) leaves it as it is.
    if (check_weight_layout(l, v.desc.dtype, v.desc.shape, v.name).is_ok()) v.layout = l;
  }
  return Status::ok();
}

}  // namespace tessera::graph::passes
