// Weight repacking: each matmul weight gets the block order the target's
// kernels read fastest (KernelTable::preferred_weight_layout), recorded on
// the weight ({layout=rows_x4}) and made once at load by ModelRunner. A
// weight any other node reads (a tied embedding table that is also the
// classifier) keeps the standard layout for all its readers: the embedding
// kernel reads rows, and a second repacked copy would double its memory.
// --weight-layout replaces the preference wherever the target's kernel
// reads the layout asked for. Without a kernel table (printing, tests)
// nothing changes.
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

namespace {

bool is_matmul(OpKind op) {
  return op == OpKind::matmul || op == OpKind::matmul_add || op == OpKind::matmul_silu_mul || op == OpKind::matmul_qkv ||
         op == OpKind::matmul_add_rms_norm;
}

// The layout every reader of weight w prefers (or reads, when one is asked
// for), or rows when they disagree or one of them is not a matmul reading w
// as its weight.
WeightLayout agreed_layout(const Graph& g, ValueId w, const std::vector<int32_t>& readers, const KernelTable& kernels,
                           std::optional<WeightLayout> asked) {
  const Value& v = g.value(w);
  std::optional<WeightLayout> agreed;
  for (int32_t r : readers) {
    if (r < 0) return WeightLayout::rows;  // returned as a graph output
    const Node& n = g.nodes[(size_t)r];
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == w && (i != 1 || !is_matmul(n.op))) return WeightLayout::rows;
    const LayoutQuery q{n.op, v.desc.dtype, v.desc.shape};
    WeightLayout l = kernels.preferred_weight_layout(q);
    if (asked) l = kernels.reads_weight_layout(q, *asked) ? *asked : WeightLayout::rows;
    if (agreed && *agreed != l) return WeightLayout::rows;
    agreed = l;
  }
  return agreed.value_or(WeightLayout::rows);
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
