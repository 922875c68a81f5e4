// The attention prologue: RoPE of Q and of K and the KV append become one
// node that the attention reads from,
//   q' = rope(q, pos); k' = rope(k, pos); kp', vp' = kv_append(k', v, slots, kp, vp)
// -> q', kp', vp' = rope_kv_append(q, k, v, pos, slots, kp, vp)
// when k' has no other reader, q' is read only by an attention over kp' and
// vp', and both ropes agree on everything but the head count. The fused node
// stands where the append stood; a folded table both ropes read (when
// fold_constants ran first), or their frequency factors, becomes its
// trailing input. Backends: any whose
// kernel table has rope_kv_append (cpu).
#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

namespace {

bool same_rotation(const RopeParams& a, const RopeParams& b) {
  return a.head_dim == b.head_dim && a.rot_dims == b.rot_dims && a.theta == b.theta && a.layout == b.layout &&
         a.freq_scale == b.freq_scale;
}

}  // namespace

Status fuse_rope_kv_append(Graph& g, const PassContext& ctx) {
  if (!target_has(ctx, OpKind::rope_kv_append, DType::f32)) return Status::ok();
  const auto readers = readers_of(g);
  std::vector<char> dead(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& app = g.nodes[i];
    if (app.op != OpKind::kv_append) continue;
    const auto& kv = std::get<KvCacheParams>(app.params);
    const int32_t rk = g.value(app.inputs[0]).producer;
    if (rk < 0 || g.nodes[(size_t)rk].op != OpKind::rope || !single_use(readers, app.inputs[0])) continue;
    // The attention reading this append's pools, and the rope producing its q.
    const auto& pool_readers = readers[(size_t)app.outputs[0]];
    if (pool_readers.size() != 1 || pool_readers[0] < 0) continue;
    const Node& att = g.nodes[(size_t)pool_readers[0]];
    if (att.op != OpKind::paged_attention || att.inputs[2] != app.outputs[1]) continue;
    const int32_t rq = g.value(att.inputs[0]).producer;
    if (rq < 0 || rq > (int32_t)i || g.nodes[(size_t)rq].op != OpKind::rope || !single_use(readers, att.inputs[0])) continue;
    const Node& ropeq = g.nodes[(size_t)rq];
    const Node& ropek = g.nodes[(size_t)rk];
    const auto& pq = std::get<RopeParams>(ropeq.params);
    const auto& pk = std::get<RopeParams>(ropek.params);
    if (!same_rotation(pq, pk) || pk.n_heads != kv.n_kv_heads || pk.head_dim != kv.head_dim ||
        ropeq.inputs[1] != ropek.inputs[1])
      continue;
    // Ropes reading a folded table (fold_constants ran first) or frequency
    // factors fuse only when they read the same one, which the fused node reads.
    const ValueId extra = ropeq.inputs.size() == 3 ? ropeq.inputs[2] : kNoValue;
    if ((ropek.inputs.size() == 3 ? ropek.inputs[2] : kNoValue) != extra) continue;
    RopeKvAppendParams p{pq, kv};
    // A backend's fused kernel may read no table, no factors or not the pools' type.
    const DType kv_dtype = g.value(app.inputs[3]).desc.dtype;
    if ((extra != kNoValue || kv_dtype != DType::f32) && ctx.kernels) {
      OpQuery q{OpKind::rope_kv_append, DType::f32, DType::f32};
      q.kv_dtype = kv_dtype;
      q.params = p;
      q.rope_table = rope_table_input(g, ropeq) != kNoValue;
      q.rope_freq_factors = rope_freq_factors_input(g, ropeq) != kNoValue;
      if (!ctx.kernels->query(q).supported) continue;
    }
    std::string label = app.label;
    if (const size_t dot = label.rfind('.'); dot != std::string::npos) label = label.substr(0, dot + 1) + "rope_kv_append";
    const ValueId q_rot = ropeq.outputs[0];
    app.op = OpKind::rope_kv_append;
    app.params = p;
    app.inputs = {ropeq.inputs[0], ropek.inputs[0], app.inputs[1], ropeq.inputs[1], app.inputs[2], app.inputs[3], app.inputs[4]};
    if (extra != kNoValue) app.inputs.push_back(extra);
    app.outputs = {q_rot, app.outputs[0], app.outputs[1]};
    app.label = label;
    g.value(q_rot).producer = (int32_t)i;
    dead[(size_t)rq] = dead[(size_t)rk] = 1;
  }
  erase_nodes(g, dead);
  return Status::ok();
}

}  // namespace tessera::graph::passes
