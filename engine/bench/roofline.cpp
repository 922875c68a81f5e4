#include "engine/bench/roofline.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/runtime/model_graph.h"

namespace tessera {

namespace {

constexpr double kSecondsPerShape = 0.05;  // each distinct shape's timing: enough for a median, short for the whole model

// The op bench's row for a graph op, or "" where it has none.
std::string bench_op(OpKind k) {
  switch (k) {
    case OpKind::embedding: return "embedding";
    case OpKind::rms_norm: return "rms_norm";
    case OpKind::matmul: return "matmul";
    case OpKind::rope: return "rope";
    case OpKind::kv_append: return "kv_append";
    case OpKind::paged_attention: return "attention";
    case OpKind::silu_mul: return "silu_mul";
    case OpKind::add: return "add";
    case OpKind::softmax: return "softmax";
    case OpKind::argmax: return "argmax";
    case OpKind::gather_rows: return "gather_rows";
    default: return "";
  }
}

// The values after the leading (row) dimension.
int64_t row_width(const TensorDesc& d) {
  int64_t w = 1;
  for (int i = 1; i < d.shape.rank; ++i) w *= d.shape[i];
  return w;
}

bool same(const OpShape& a, const OpShape& b) {
  return a.op == b.op && a.dtype == b.dtype && a.m == b.m && a.k == b.k && a.n == b.n && a.heads == b.heads &&
         a.kv_heads == b.kv_heads && a.head_dim == b.head_dim && a.ctx == b.ctx && a.q_len == b.q_len;
}

}  // namespace

Expected<NodeShapes> model_op_shapes(const ModelWeights& w, int64_t tokens, int32_t ctx) {
  const KvLayout kv{(int32_t)((ctx + 15) / 16 + 1), 16};
  TS_ASSIGN_OR_RETURN(const graph::Graph g, build_model_graph(w, kv, {true}));
  NodeShapes out;
  std::set<std::string> missing;
  for (const graph::Node& n : g.nodes) {
    const std::string op = bench_op(n.op);
    if (op.empty()) {
      missing.insert(std::string(name(n.op)));
      continue;
    }
    const graph::Value& y = g.value(n.outputs[0]);
    // Rows of the step: kv_append's outputs are the pools it wrote, its rows those of its K input.
    const graph::Value& rows_of = n.op == OpKind::kv_append ? g.value(n.inputs[0]) : y;
    const int64_t rows = rows_of.rows == RowCount::tokens ? tokens : rows_of.rows == RowCount::logit_rows ? 1 : rows_of.desc.shape[0];
    OpShape s;
    s.op = op;
    s.n = rows;
    switch (n.op) {
      case OpKind::matmul: {
        const TensorDesc& wd = g.value(n.inputs[1]).desc;
        s.dtype = wd.dtype, s.m = wd.shape[0], s.k = wd.shape[1];
        break;
      }
      case OpKind::embedding: {
        const TensorDesc& t = g.value(n.inputs[0]).desc;
        s.dtype = t.dtype, s.m = t.shape[0], s.k = t.shape[1];
        break;
      }
      case OpKind::rope: {
        const auto& p = std::get<RopeParams>(n.params);
        s.heads = p.n_heads, s.head_dim = p.head_dim;
        break;
      }
      case OpKind::kv_append: {
        const auto& p = std::get<KvCacheParams>(n.params);
        s.kv_heads = p.n_kv_heads, s.head_dim = p.head_dim, s.ctx = ctx;
        break;
      }
      case OpKind::paged_attention: {
        const auto& p = std::get<AttentionParams>(n.params);
        s.heads = p.n_heads, s.kv_heads = p.n_kv_heads, s.head_dim = p.head_dim, s.ctx = ctx, s.q_len = (int32_t)rows;
        break;
      }
      case OpKind::argmax:
      case OpKind::softmax: s.k = row_width(g.value(n.inputs[0]).desc); break;
      case OpKind::gather_rows: {
        const graph::Value& x = g.value(n.inputs[0]);
        s.m = x.rows == RowCount::tokens ? tokens : x.desc.shape[0];
        s.k = row_width(x.desc);
        break;
      }
      default: s.k = row_width(y.desc); break;  // rms_norm, add, silu_mul: rows of the output's width
    }
    auto it = std::find_if(out.shapes.begin(), out.shapes.end(), [&](const auto& e) { return same(e.first, s); });
    if (it == out.shapes.end()) out.shapes.push_back({s, 1});
    else ++it->second;
  }
  out.not_timed.assign(missing.begin(), missing.end());
  return out;
}

Expected<double> prefill_flops(const ModelWeights& w, int32_t tokens) {
  TS_ASSIGN_OR_RETURN(const NodeShapes ns, model_op_shapes(w, tokens, tokens));
  double flops = 0;
  for (const auto& [s, count] : ns.shapes) flops += find_op(s.op)->cost(s).flops * count;
  return flops;
}

Expected<Roofline> measure_roofline(ParallelFor& pf, const ModelWeights& w, int32_t prompt_tokens,
                                    void (*log)(const std::string&)) {
  Roofline r;
  r.model = w.source;
  r.prompt_tokens = prompt_tokens;
  r.threads = pf.num_threads();
  r.roofs = measure_machine_roofs(pf);
  std::set<std::string> missing;
  // Decode: one token at the end of the prompt; prefill: the prompt in one step.
  for (const auto& [phase, tokens, ctx] : {std::tuple<const char*, int64_t, int32_t>{"decode", 1, prompt_tokens + 1},
                                          {"prefill", prompt_tokens, prompt_tokens}}) {
    TS_ASSIGN_OR_RETURN(const NodeShapes ns, model_op_shapes(w, tokens, ctx));
    missing.insert(ns.not_timed.begin(), ns.not_timed.end());
    log("bench: roofline: timing " + std::to_string(ns.shapes.size()) + " distinct op shapes of a " + phase + " step");
    std::map<std::string, RooflinePoint> by_op;
    for (const auto& [s, count] : ns.shapes) {
      TS_ASSIGN_OR_RETURN(const OpTiming t, time_op(pf, s, false, kSecondsPerShape));
      RooflinePoint& p = by_op[s.op];
      p.phase = phase, p.op = s.op, p.compute = t.cost.compute;
      p.calls += count;
      p.flops += t.cost.flops * count;
      p.bytes += t.cost.bytes * count;
      p.time_us += t.time_us * count;
    }
    for (auto& [op, p] : by_op) r.points.push_back(p);
  }
  r.not_timed.assign(missing.begin(), missing.end());
  return r;
}

}  // namespace tessera
