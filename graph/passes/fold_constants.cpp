// Constant folding: what a node computes from its parameters alone becomes a
// constant value made once at load. Today that is RoPE's cos/sin: rope and
// rope_kv_append compute cos/sin(position * theta^(-2i/rot_dims)) per token
// and pair, which depends only on the position (below the runner's context)
// and the rotation, so
//   y = rope(x, pos)  ->  y = rope(x, pos, %table)
//   %table = constant "rope_table.0" : f32[P, rot_dims/2, 2] {recipe=rope_table, ...}
// with one shared table per distinct (rot_dims, theta, positions): every layer
// of a llama reads the same one. Applies when the context says how many
// positions (PassContext::max_positions > 0) and the target's kernel table
// takes the table form (OpQuery::rope_table; the CPU does, Vulkan does not).
// Runs after fuse_rope_kv_append, which also carries a table through.
#include <cmath>
#include <map>
#include <tuple>

#include "graph/passes/passes.h"

namespace tessera::graph::passes {

namespace {

bool target_takes_table(const PassContext& ctx, OpKind op) {
  if (!ctx.kernels) return true;
  OpQuery q{op, DType::f32, DType::f32};
  q.rope_table = true;
  return ctx.kernels->query(q).supported;
}

}  // namespace

Status fold_constants(Graph& g, const PassContext& ctx) {
  if (ctx.max_positions <= 0) return Status::ok();
  const bool rope_ok = target_takes_table(ctx, OpKind::rope);
  const bool fused_ok = target_takes_table(ctx, OpKind::rope_kv_append);
  std::map<std::tuple<int32_t, float, int32_t>, ValueId> tables;
  for (Node& n : g.nodes) {
    const bool plain = n.op == OpKind::rope && n.inputs.size() == 2 && rope_ok;
    const bool fused = n.op == OpKind::rope_kv_append && n.inputs.size() == 7 && fused_ok;
    if (!plain && !fused) continue;
    const RopeParams& p = plain ? std::get<RopeParams>(n.params) : std::get<RopeKvAppendParams>(n.params).rope;
    // A rotation the recipe cannot describe (odd rot_dims, theta not a positive number, scaled positions) stays
    // on the fly; so does one with frequency factors (an extra input: the sizes above exclude it).
    if (p.rot_dims <= 0 || p.rot_dims % 2 || !std::isfinite(p.theta) || p.theta <= 0 || p.freq_scale != 1.0f) continue;
    const auto key = std::make_tuple(p.rot_dims, p.theta, ctx.max_positions);
    auto it = tables.find(key);
    if (it == tables.end()) {
      Value t;
      t.kind = ValueKind::constant;
      t.name = "rope_table." + std::to_string(tables.size());
      t.rope_table = RopeTableParams{p.rot_dims, p.theta, ctx.max_positions};
      t.desc = TensorDesc::contiguous(DType::f32, Shape{ctx.max_positions, p.rot_dims / 2, 2});
      it = tables.emplace(key, g.add_value(std::move(t))).first;
    }
    n.inputs.push_back(it->second);
  }
  return Status::ok();
}

}  // namespace tessera::graph::passes
