// Tensor parallelism (Megatron-LM's split): rank r of N keeps 1/N of every
// layer. The projections into the attention heads and the FFN's hidden
// columns are column-parallel (each rank holds a range of their weight's
// rows: its heads, its hidden columns), so attention, RoPE, the KV append
// and the gating run on the rank's own heads and columns with no exchange;
// the projections back to the model width are row-parallel (a range of
// their weight's columns), each rank's product a partial sum, and an
// all_reduce after them gives every rank the whole. The classifier is
// vocabulary-parallel: each rank scores its range of the vocabulary and an
// all_gather puts the logits side by side. The embedding table is split by
// columns (each rank looks up its share of the model width, and an
// all_gather joins them: the same floats, exchanged once a step), where a
// rank's columns are whole blocks of its type; otherwise it stays whole and
// the runner says so. The norms and the residual stream stay whole.
//
// Roles are read from the weights' GGUF names (the graph builder's names
// for every architecture); a matmul whose weight has no role stays whole.
// Runs on the builder's graph, before the fusions: they then pack and fuse
// the rank's smaller weights as they would a smaller model's.
#include <string>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

namespace {

enum class Role { none, column, row, vocabulary };

Role role_of(const Node& n, const Value& w) {
  for (const char* s : {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_qkv.weight", ".ffn_gate.weight", ".ffn_up.weight"})
    if (w.name.ends_with(s)) return Role::column;
  if (w.name.ends_with(".attn_output.weight") || w.name.ends_with(".ffn_down.weight")) return Role::row;
  if (n.label == "output" && (w.name == "output.weight" || w.name == "token_embd.weight")) return Role::vocabulary;
  return Role::none;
}

bool is_qkv_bias(const std::string& name) {
  return name.ends_with(".attn_q.bias") || name.ends_with(".attn_k.bias") || name.ends_with(".attn_v.bias");
}

std::string rank_of(const PassContext& ctx) {
  return "--tensor-parallel " + std::to_string(ctx.tp_size) + " (rank " + std::to_string(ctx.tp_rank) + ")";
}

Status divides(int64_t what, int32_t n, const std::string& name, const PassContext& ctx) {
  if (what % n == 0) return Status::ok();
  return invalid_argument(rank_of(ctx) + ": " + name + " (" + std::to_string(what) + ") does not divide among " + std::to_string(n) +
                          " ranks");
}

// The rank's rows of a column-parallel weight (or bias): each of its parts
// cut evenly, so every rank's q, k and v (or gate and up) stay aligned.
Status shard_rows(Graph& g, ValueId id, std::vector<int64_t> parts, const PassContext& ctx) {
  Value& w = g.value(id);
  if (w.shard) return Status::ok();  // a weight two nodes read (a tied classifier is the embedding's: not here)
  if (parts.empty()) parts = {w.desc.shape[0]};
  int64_t rows = 0;
  for (int64_t p : parts) {
    TS_TRY(divides(p, ctx.tp_size, w.name + "'s rows", ctx));
    rows += p / ctx.tp_size;
  }
  w.shard = WeightShard{WeightShard::Axis::rows, ctx.tp_rank, ctx.tp_size, parts.size() > 1 ? parts : std::vector<int64_t>{}, "", false};
  Shape s = w.desc.shape;
  s[0] = rows;
  w.desc = TensorDesc::contiguous(w.desc.dtype, s);
  return Status::ok();
}

// The rank's columns of a row-parallel weight, whole blocks of its type.
Status shard_cols(Graph& g, ValueId id, const PassContext& ctx) {
  Value& w = g.value(id);
  const int64_t k = w.desc.shape[1];
  TS_TRY(divides(k, ctx.tp_size, w.name + "'s columns", ctx));
  // Columns that are not whole blocks of the weight's type are held as the
  // f32 values the blocks decode to (the runner reports each such weight).
  const bool widened = !is_whole_blocks(w.desc.dtype, k / ctx.tp_size);
  w.shard = WeightShard{WeightShard::Axis::cols, ctx.tp_rank, ctx.tp_size, {}, "", widened};
  w.desc = TensorDesc::contiguous(widened ? DType::f32 : w.desc.dtype, Shape{w.desc.shape[0], k / ctx.tp_size});
  return Status::ok();
}

// The embedding table's columns, where a rank's share of them is whole
// blocks of the table's type (a table held widened to f32 would outweigh the
// whole quantized one); false where it stays whole.
bool shard_table_cols(Graph& g, ValueId id, const PassContext& ctx) {
  Value& w = g.value(id);
  if (w.kind != ValueKind::weight || w.shard) return false;
  const int64_t k = w.desc.shape[1];
  if (k % ctx.tp_size != 0 || !is_whole_blocks(w.desc.dtype, k / ctx.tp_size)) return false;
  w.shard = WeightShard{WeightShard::Axis::cols, ctx.tp_rank, ctx.tp_size, {}, "", false};
  w.desc = TensorDesc::contiguous(w.desc.dtype, Shape{w.desc.shape[0], k / ctx.tp_size});
  return true;
}

// The classifier's rows (the vocabulary), as even as integers allow. A tied
// classifier reads the embedding's table (whose columns the embedding may
// have split already): its range is a weight of its own, cut from the table.
ValueId shard_vocabulary(Graph& g, ValueId id, const PassContext& ctx) {
  Value w = g.value(id);
  const ShardRange r = shard_range(w.desc.shape[0], ctx.tp_size, ctx.tp_rank);
  const int64_t cols = w.shard ? w.desc.shape[1] * w.shard->world : w.desc.shape[1];
  w.shard = WeightShard{WeightShard::Axis::rows, ctx.tp_rank, ctx.tp_size, {}, w.name == "output.weight" ? "" : w.name, false};
  w.name = "output.weight";
  w.desc = TensorDesc::contiguous(w.desc.dtype, Shape{r.size(), cols});
  w.producer = -1;
  return g.add_value(std::move(w));
}

}  // namespace

Status tensor_parallel(Graph& g, const PassContext& ctx) {
  const int32_t n_ranks = ctx.tp_size;
  if (n_ranks <= 1) return Status::ok();
  if (ctx.tp_rank < 0 || ctx.tp_rank >= n_ranks)
    return invalid_argument("tensor_parallel: rank " + std::to_string(ctx.tp_rank) + " is outside 0.." + std::to_string(n_ranks - 1));
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + g.nodes.size() / 4);
  // A value replaced by its all_reduce (or all_gather) for every later reader.
  std::vector<ValueId> replaced(g.values.size(), kNoValue);
  auto add_collective = [&](OpKind op, OpParams params, ValueId in, const std::string& label) {
    Value out;
    out.rows = g.value(in).rows;
    out.desc = g.value(in).desc;
    const ValueId id = g.add_value(std::move(out));
    replaced.resize(g.values.size(), kNoValue);
    replaced[(size_t)in] = id;
    nodes.push_back(Node{op, params, {in}, {id}, label, {}, {}});
  };
  for (Node n : g.nodes) {
    for (ValueId& in : n.inputs)
      if (in >= 0 && replaced[(size_t)in] != kNoValue) in = replaced[(size_t)in];
    switch (n.op) {
      case OpKind::matmul:
      case OpKind::matmul_qkv:
      case OpKind::matmul_silu_mul: {
        const ValueId w = n.inputs[1];
        switch (role_of(n, g.value(w))) {
          case Role::column: {
            std::vector<int64_t> parts;
            if (n.op == OpKind::matmul_qkv) {
              auto& p = std::get<QkvSplitParams>(n.params);
              parts = {p.q_rows, p.kv_rows, p.kv_rows};
              p.q_rows /= n_ranks;
              p.kv_rows /= n_ranks;
            } else if (n.op == OpKind::matmul_silu_mul) {
              parts = {g.value(w).desc.shape[0] / 2, g.value(w).desc.shape[0] / 2};
            }
            TS_TRY(shard_rows(g, w, parts, ctx));
            nodes.push_back(n);
            continue;
          }
          case Role::row: {
            if (n.op != OpKind::matmul) break;
            TS_TRY(shard_cols(g, w, ctx));
            nodes.push_back(n);
            add_collective(OpKind::all_reduce, NoParams{}, n.outputs[0], n.label + ".all_reduce");
            continue;
          }
          case Role::vocabulary: {
            if (n.op != OpKind::matmul) break;
            const int64_t vocab = g.value(w).desc.shape[0];
            n.inputs[1] = shard_vocabulary(g, w, ctx);
            nodes.push_back(n);
            add_collective(OpKind::all_gather, AllGatherParams{(int32_t)vocab, n_ranks}, n.outputs[0], n.label + ".all_gather");
            continue;
          }
          case Role::none: break;
        }
        break;
      }
      case OpKind::embedding: {
        const int64_t dim = g.value(n.inputs[0]).desc.shape[1];
        if (!shard_table_cols(g, n.inputs[0], ctx)) break;
        nodes.push_back(n);
        add_collective(OpKind::all_gather, AllGatherParams{(int32_t)dim, n_ranks}, n.outputs[0], n.label + ".all_gather");
        continue;
      }
      case OpKind::bias_add:
        if (g.value(n.inputs[1]).kind == ValueKind::weight && is_qkv_bias(g.value(n.inputs[1]).name))
          TS_TRY(shard_rows(g, n.inputs[1], {}, ctx));
        break;
      case OpKind::rope: {
        auto& p = std::get<RopeParams>(n.params);
        TS_TRY(divides(p.n_heads, n_ranks, n.label + "'s heads", ctx));
        p.n_heads /= n_ranks;
        break;
      }
      case OpKind::kv_append: {
        auto& p = std::get<KvCacheParams>(n.params);
        TS_TRY(divides(p.n_kv_heads, n_ranks, n.label + "'s KV heads", ctx));
        p.n_kv_heads /= n_ranks;
        for (size_t i = 3; i < 5; ++i) {
          Value& pool = g.value(n.inputs[i]);
          if (pool.desc.shape[1] == (int64_t)p.n_kv_heads * n_ranks * p.head_dim)
            pool.desc = TensorDesc::contiguous(pool.desc.dtype, Shape{pool.desc.shape[0], (int64_t)p.n_kv_heads * p.head_dim});
        }
        break;
      }
      case OpKind::paged_attention: {
        auto& p = std::get<AttentionParams>(n.params);
        TS_TRY(divides(p.n_heads, n_ranks, n.label + "'s heads", ctx));
        TS_TRY(divides(p.n_kv_heads, n_ranks, n.label + "'s KV heads", ctx));
        p.n_heads /= n_ranks;
        p.n_kv_heads /= n_ranks;
        break;
      }
      case OpKind::matmul_add:
      case OpKind::matmul_add_rms_norm:
      case OpKind::matmul_epilogue:
      case OpKind::rope_kv_append:
      case OpKind::all_reduce:
      case OpKind::all_gather:
        return invalid_argument("tensor_parallel: runs on the builder's graph, before the fusions and once; met " +
                                std::string(name(n.op)) + " (" + n.label + ")");
      default: break;
    }
    nodes.push_back(std::move(n));
  }
  for (ValueId& out : g.outputs)
    if (replaced[(size_t)out] != kNoValue) out = replaced[(size_t)out];
  g.nodes = std::move(nodes);
  return settle_rebuilt_graph(g, ctx);
}

}  // namespace tessera::graph::passes
