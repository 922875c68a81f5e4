#include "graph/shape_rules.h"

#include <charconv>
#include <cmath>
#include <string>

namespace tessera::graph {

namespace {

Status expect(bool ok, OpKind op, const std::string& what) {
  if (ok) return Status::ok();
  return invalid_argument(std::string(name(op)) + ": " + what);
}

std::string desc_of(const Value& v) { return v.desc.to_string(); }

InferredOutput f32_rows(RowCount rows, int64_t rows_max, int64_t cols) {
  return {TensorDesc::contiguous(DType::f32, Shape{rows_max, cols}), rows};
}

std::string shortest(float f) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, f).ptr);
}

// rope's and rope_kv_append's optional trailing input: a rope_table constant
// made for this rotation (same rot_dims and theta), so reading it computes
// what the kernel would on the fly.
Status check_rope_table(OpKind op, const RopeParams& p, const Value& t) {
  if (t.kind != ValueKind::constant || !t.rope_table)
    return invalid_argument(std::string(name(op)) + ": the table input must be a rope_table constant, got a " + to_string(t.kind));
  const RopeTableParams& r = *t.rope_table;
  if (r.rot_dims != p.rot_dims || r.theta != p.theta)
    return invalid_argument(std::string(name(op)) + ": table '" + t.name + "' is for rot_dims=" + std::to_string(r.rot_dims) +
                            ", theta=" + shortest(r.theta) + "; the node rotates rot_dims=" + std::to_string(p.rot_dims) +
                            ", theta=" + shortest(p.theta));
  return Status::ok();
}

Status check_rotation(OpKind op, const RopeParams& p) {
  TS_TRY(expect(p.rot_dims > 0 && p.rot_dims <= p.head_dim && p.rot_dims % 2 == 0, op, "rot_dims must be even and <= head_dim"));
  return expect(p.freq_scale > 0.0f && std::isfinite(p.freq_scale), op, "freq_scale must be a finite number > 0, got " + shortest(p.freq_scale));
}

// The optional input after rope's (or rope_kv_append's) fixed ones: a folded
// table (a rope_table constant, only for an unscaled rotation: the recipe
// knows neither freq_scale nor factors) or per-pair frequency factors
// (f32[rot_dims/2], a weight).
// The KV pools a node writes or reads: f32, f16, bf16, q8_0 or fp8_e4m3, K's
// and V's alike; the 8-bit types quantize 32 elements of one head a block.
Status check_kv_pools(OpKind op, const Value& k_pool, const Value& v_pool, int32_t head_dim) {
  const DType t = k_pool.desc.dtype;
  TS_TRY(expect(t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::q8_0 || t == DType::fp8_e4m3, op,
                "KV pools must be f32, f16, bf16, q8_0 or fp8_e4m3, got " + desc_of(k_pool)));
  if (t == DType::q8_0 || t == DType::fp8_e4m3)
    TS_TRY(expect(head_dim % 32 == 0, op,
                  std::string(name(t)) + " KV pools need head_dim a multiple of 32, got " + std::to_string(head_dim)));
  return expect(v_pool.desc.dtype == t, op, "K and V pools differ in type: " + desc_of(k_pool) + " and " + desc_of(v_pool));
}

Status check_rope_extra(OpKind op, const RopeParams& p, const Value& t) {
  if (t.kind == ValueKind::constant) {
    TS_TRY(check_rope_table(op, p, t));
    return expect(p.freq_scale == 1.0f, op, "a folded table is for freq_scale=1; the node scales positions by " + shortest(p.freq_scale));
  }
  return expect(t.desc.dtype == DType::f32 && t.desc.shape.rank == 1 && t.desc.shape[0] == p.rot_dims / 2, op,
                "the extra input must be a rope_table constant or frequency factors f32[" + std::to_string(p.rot_dims / 2) +
                    "] (rot_dims / 2), got a " + to_string(t.kind) + " " + desc_of(t));
}

std::string reg_name(const ElementwiseProgram& p, int r) {
  return r < p.n_inputs ? "a" + std::to_string(r) : "t" + std::to_string(r - p.n_inputs);
}

// An elementwise program over input registers of these types. The output has
// the shape of the full-size inputs (for matmul_epilogue, a0: the product);
// an input read as bias_add's b is one row of it. Returns the output.
Expected<InferredOutput> check_program(OpKind op, const ElementwiseProgram& p, const std::vector<const Value*>& regs) {
  TS_TRY(expect(p.n_instrs >= 1 && p.n_instrs <= kEwMaxInstrs, op,
                "program has " + std::to_string(p.n_instrs) + " instructions; expected 1 to " + std::to_string(kEwMaxInstrs)));
  TS_TRY(expect(p.n_inputs == regs.size() && p.n_inputs <= kEwMaxInputs, op,
                "program reads " + std::to_string(p.n_inputs) + " input registers, the node gives " + std::to_string(regs.size())));
  std::vector<char> row(regs.size(), 0), full(regs.size(), 0);
  for (int i = 0; i < p.n_instrs; ++i) {
    const EwInstr& in = p.instrs[i];
    const std::string where = "instruction " + std::to_string(i) + " (" + std::string(name(in.op)) + ")";
    TS_TRY(expect((int)in.op < kEwOpCount, op, where + ": unknown instruction"));
    const int defined = p.n_inputs + i;
    TS_TRY(expect(in.a < defined, op, where + " reads " + reg_name(p, in.a) + " before it is computed"));
    if (in.a < p.n_inputs) full[in.a] = 1;
    if (is_unary(in.op)) continue;
    TS_TRY(expect(in.b < defined, op, where + " reads " + reg_name(p, in.b) + " before it is computed"));
    if (in.op == EwOp::bias_add) {
      TS_TRY(expect(in.b < p.n_inputs, op, where + ": the bias must be an input register, got " + reg_name(p, in.b)));
      row[in.b] = 1;
    } else if (in.b < p.n_inputs) {
      full[in.b] = 1;
    }
  }
  const Value* shape = nullptr;
  for (size_t r = 0; r < regs.size(); ++r) {
    TS_TRY(expect(regs[r]->desc.dtype == DType::f32, op, reg_name(p, (int)r) + " must be f32, got " + desc_of(*regs[r])));
    TS_TRY(expect(!(row[r] && full[r]), op, reg_name(p, (int)r) + " is read both as a bias row and as a full tensor"));
    if (!row[r] && !shape) shape = regs[r];
  }
  TS_TRY(expect(shape != nullptr, op, "no full-size input to take the output shape from"));
  for (size_t r = 0; r < regs.size(); ++r) {
    const Value& v = *regs[r];
    if (row[r])
      TS_TRY(expect(v.desc.shape.rank == 1 && v.desc.shape[0] == shape->desc.shape.last(), op,
                    "bias " + reg_name(p, (int)r) + " " + desc_of(v) + " is not one row of " + desc_of(*shape)));
    else
      TS_TRY(expect(v.desc.shape == shape->desc.shape && v.rows == shape->rows, op,
                    reg_name(p, (int)r) + " " + desc_of(v) + " is not " + desc_of(*shape)));
  }
  return InferredOutput{shape->desc, shape->rows};
}

}  // namespace

Expected<std::vector<InferredOutput>> infer_outputs(const Graph& g, OpKind op, const OpParams& params,
                                                    const std::vector<ValueId>& in) {
  auto arity = [&](size_t n) { return expect(in.size() == n, op, "expects " + std::to_string(n) + " inputs, got " + std::to_string(in.size())); };
  auto v = [&](size_t i) -> const Value& { return g.value(in[i]); };
  switch (op) {
    case OpKind::embedding: {
      TS_TRY(arity(2));
      TS_TRY(expect(v(0).desc.shape.rank == 2, op, "table must be 2-D, got " + desc_of(v(0))));
      TS_TRY(expect(v(1).desc.dtype == DType::i32, op, "ids must be i32, got " + desc_of(v(1))));
      return std::vector{f32_rows(v(1).rows, v(1).desc.shape[0], v(0).desc.shape[1])};
    }
    case OpKind::rms_norm: {
      TS_TRY(arity(2));
      TS_TRY(expect(v(1).desc.shape.numel() == v(0).desc.shape.last(), op,
                    "weight " + desc_of(v(1)) + " does not match rows of " + desc_of(v(0))));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::matmul: {
      TS_TRY(arity(2));
      const auto& x = v(0).desc;
      const auto& w = v(1).desc;
      TS_TRY(expect(w.shape.rank == 2 && x.shape.rank == 2, op, "expects x[T, K] and w[N, K]"));
      TS_TRY(expect(x.shape[1] == w.shape[1], op, "x " + x.to_string() + " and w " + w.to_string() + " disagree on K"));
      return std::vector{f32_rows(v(0).rows, x.shape[0], w.shape[0])};
    }
    case OpKind::rope: {
      // (x, positions[, table | frequency factors])
      TS_TRY(expect(in.size() == 2 || in.size() == 3, op, "expects 2 inputs (x, positions) or 3 (x, positions, and a table or frequency factors), got " + std::to_string(in.size())));
      const auto& p = std::get<RopeParams>(params);
      TS_TRY(check_rotation(op, p));
      if (in.size() == 3) TS_TRY(check_rope_extra(op, p, v(2)));
      TS_TRY(expect(v(0).desc.shape.last() == (int64_t)p.n_heads * p.head_dim, op, "x width is not n_heads * head_dim"));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::kv_append: {
      // (k, v, slot_mapping, k_pool, v_pool) -> (k_pool', v_pool')
      TS_TRY(arity(5));
      const auto& p = std::get<KvCacheParams>(params);
      const int64_t width = (int64_t)p.n_kv_heads * p.head_dim;
      TS_TRY(expect(v(0).desc.shape.last() == width && v(1).desc.shape.last() == width, op, "k/v width is not n_kv_heads * head_dim"));
      TS_TRY(expect(v(3).desc.shape.last() == width && v(4).desc.shape.last() == width, op, "pool width is not n_kv_heads * head_dim"));
      TS_TRY(check_kv_pools(op, v(3), v(4), p.head_dim));
      return std::vector{InferredOutput{v(3).desc, RowCount::fixed}, InferredOutput{v(4).desc, RowCount::fixed}};
    }
    case OpKind::paged_attention: {
      // (q, k_pool, v_pool, positions, query_start, seq_lens, block_tables)
      TS_TRY(arity(7));
      const auto& p = std::get<AttentionParams>(params);
      TS_TRY(expect(p.n_kv_heads > 0 && p.n_heads % p.n_kv_heads == 0, op, "n_heads must be a multiple of n_kv_heads"));
      TS_TRY(expect(v(0).desc.shape.last() == (int64_t)p.n_heads * p.head_dim, op, "q width is not n_heads * head_dim"));
      TS_TRY(expect(p.window >= 0, op, "window must be >= 0 (0: none), got " + std::to_string(p.window)));
      TS_TRY(expect(p.softcap >= 0.0f && std::isfinite(p.softcap), op, "softcap must be a finite number >= 0 (0: none), got " + shortest(p.softcap)));
      TS_TRY(check_kv_pools(op, v(1), v(2), p.head_dim));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::head_rms_norm: {
      TS_TRY(arity(2));
      TS_TRY(expect(v(0).desc.dtype == DType::f32 && v(0).desc.shape.rank == 2, op, "x must be f32[T, H * head_dim], got " + desc_of(v(0))));
      TS_TRY(expect(v(1).desc.dtype == DType::f32 && v(1).desc.shape.rank == 1 && v(1).desc.shape[0] > 0 &&
                        v(0).desc.shape.last() % v(1).desc.shape[0] == 0,
                    op, "weight " + desc_of(v(1)) + " is not f32[head_dim] for a head_dim dividing the rows of " + desc_of(v(0))));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::scale:
    case OpKind::softcap: {
      TS_TRY(arity(1));
      TS_TRY(expect(v(0).desc.dtype == DType::f32, op, "x must be f32, got " + desc_of(v(0))));
      if (op == OpKind::scale) {
        const float s = std::get<ScaleParams>(params).scale;
        TS_TRY(expect(std::isfinite(s), op, "scale must be finite, got " + shortest(s)));
      } else {
        const float c = std::get<SoftcapParams>(params).cap;
        TS_TRY(expect(c > 0.0f && std::isfinite(c), op, "cap must be a finite number > 0, got " + shortest(c)));
      }
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::all_reduce: {
      TS_TRY(arity(1));
      TS_TRY(expect(v(0).desc.dtype == DType::f32, op, "x must be f32, got " + desc_of(v(0))));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::send: {
      TS_TRY(arity(1));
      TS_TRY(expect(v(0).desc.dtype == DType::f32 && v(0).desc.shape.rank == 2, op, "x must be f32[T, D], got " + desc_of(v(0))));
      TS_TRY(expect(std::get<PeerParams>(params).peer >= 0, op, "peer must be a rank >= 0"));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::recv: {
      TS_TRY(arity(1));
      const auto& p = std::get<PeerParams>(params);
      TS_TRY(expect(v(0).desc.dtype == DType::i32, op, "its input gives the rows (positions:i32[T]), got " + desc_of(v(0))));
      TS_TRY(expect(p.peer >= 0 && p.cols > 0, op, "needs a peer >= 0 and cols > 0"));
      return std::vector{f32_rows(v(0).rows, v(0).desc.shape[0], p.cols)};
    }
    case OpKind::all_gather: {
      TS_TRY(arity(1));
      const auto& p = std::get<AllGatherParams>(params);
      TS_TRY(expect(v(0).desc.dtype == DType::f32 && v(0).desc.shape.rank == 2, op, "x must be f32[R, C], got " + desc_of(v(0))));
      TS_TRY(expect(p.world >= 1 && p.total >= p.world, op,
                    "needs world >= 1 and total >= world, got total=" + std::to_string(p.total) + ", world=" + std::to_string(p.world)));
      // Every rank's part is total/world rounded down or up (shard_range).
      const int64_t c = v(0).desc.shape[1];
      TS_TRY(expect(c == p.total / p.world || c == (p.total + p.world - 1) / p.world, op,
                    "x has " + std::to_string(c) + " columns; a rank's part of " + std::to_string(p.total) + " among " +
                        std::to_string(p.world) + " has " + std::to_string(p.total / p.world) + " or " +
                        std::to_string((p.total + p.world - 1) / p.world)));
      return std::vector{f32_rows(v(0).rows, v(0).desc.shape[0], p.total)};
    }
    case OpKind::silu_mul:
    case OpKind::gelu_mul:
    case OpKind::mul:
    case OpKind::add: {
      TS_TRY(arity(2));
      TS_TRY(expect(v(0).desc.shape == v(1).desc.shape, op, desc_of(v(0)) + " and " + desc_of(v(1)) + " differ"));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::silu:
    case OpKind::gelu: {
      TS_TRY(arity(1));
      TS_TRY(expect(v(0).desc.dtype == DType::f32, op, "x must be f32, got " + desc_of(v(0))));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::bias_add: {
      TS_TRY(arity(2));
      TS_TRY(expect(v(0).desc.dtype == DType::f32 && v(0).desc.shape.rank == 2, op, "x must be f32[T, N], got " + desc_of(v(0))));
      TS_TRY(expect(v(1).desc.dtype == DType::f32 && v(1).desc.shape.rank == 1 && v(1).desc.shape[0] == v(0).desc.shape[1], op,
                    "bias must be f32[" + std::to_string(v(0).desc.shape[1]) + "] (one row of x), got " + desc_of(v(1))));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::elementwise: {
      TS_TRY(expect(!in.empty(), op, "expects at least one input"));
      std::vector<const Value*> regs;
      for (size_t i = 0; i < in.size(); ++i) regs.push_back(&v(i));
      TS_ASSIGN_OR_RETURN(InferredOutput o, check_program(op, std::get<ElementwiseProgram>(params), regs));
      return std::vector{o};
    }
    case OpKind::matmul_epilogue: {
      // (x, w, extra...): register a0 is the product, a1... the extras.
      TS_TRY(expect(in.size() >= 2, op, "expects x, w and the epilogue's extra inputs"));
      const auto& x = v(0).desc;
      const auto& w = v(1).desc;
      TS_TRY(expect(w.shape.rank == 2 && x.shape.rank == 2, op, "expects x[T, K] and w[N, K]"));
      TS_TRY(expect(x.shape[1] == w.shape[1], op, "x " + x.to_string() + " and w " + w.to_string() + " disagree on K"));
      const InferredOutput y = f32_rows(v(0).rows, x.shape[0], w.shape[0]);
      Value product;
      product.desc = y.desc;
      product.rows = y.rows;
      std::vector<const Value*> regs = {&product};
      for (size_t i = 2; i < in.size(); ++i) regs.push_back(&v(i));
      TS_ASSIGN_OR_RETURN(InferredOutput o, check_program(op, std::get<ElementwiseProgram>(params), regs));
      TS_TRY(expect(o.desc.shape == y.desc.shape && o.rows == y.rows, op, "program output is not the product's shape"));
      return std::vector{o};
    }
    case OpKind::softmax: {
      TS_TRY(arity(1));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
    case OpKind::argmax: {
      TS_TRY(arity(1));
      return std::vector{InferredOutput{TensorDesc::contiguous(DType::i32, Shape{v(0).desc.shape[0]}), v(0).rows}};
    }
    case OpKind::gather_rows: {
      TS_TRY(arity(2));
      TS_TRY(expect(v(1).desc.dtype == DType::i32, op, "rows must be i32"));
      TensorDesc d = TensorDesc::contiguous(v(0).desc.dtype, Shape{v(1).desc.shape[0], v(0).desc.shape.last()});
      return std::vector{InferredOutput{d, v(1).rows}};
    }
    case OpKind::matmul_add:
    case OpKind::matmul_silu_mul:
    case OpKind::matmul_qkv: {
      TS_TRY(arity(op == OpKind::matmul_add ? 3 : 2));
      const auto& x = v(0).desc;
      const auto& w = v(1).desc;
      TS_TRY(expect(w.shape.rank == 2 && x.shape.rank == 2, op, "expects x[T, K] and w[N, K]"));
      TS_TRY(expect(x.shape[1] == w.shape[1], op, "x " + x.to_string() + " and w " + w.to_string() + " disagree on K"));
      if (op == OpKind::matmul_add) {
        const InferredOutput y = f32_rows(v(0).rows, x.shape[0], w.shape[0]);
        TS_TRY(expect(v(2).desc.shape == y.desc.shape && v(2).rows == y.rows, op,
                      "residual " + desc_of(v(2)) + " is not the product's shape"));
        return std::vector{y};
      }
      if (op == OpKind::matmul_silu_mul) {
        TS_TRY(expect(w.shape[0] % 2 == 0, op, "packed gate/up weight needs an even row count, got " + w.to_string()));
        return std::vector{f32_rows(v(0).rows, x.shape[0], w.shape[0] / 2)};
      }
      const auto& p = std::get<QkvSplitParams>(params);
      TS_TRY(expect(p.q_rows > 0 && p.kv_rows > 0 && w.shape[0] == (int64_t)p.q_rows + 2 * (int64_t)p.kv_rows, op,
                    "packed weight " + w.to_string() + " is not q_rows + 2 * kv_rows rows"));
      return std::vector{f32_rows(v(0).rows, x.shape[0], p.q_rows), f32_rows(v(0).rows, x.shape[0], p.kv_rows),
                         f32_rows(v(0).rows, x.shape[0], p.kv_rows)};
    }
    case OpKind::add_rms_norm:
    case OpKind::matmul_add_rms_norm: {
      const bool mm = op == OpKind::matmul_add_rms_norm;
      TS_TRY(arity(mm ? 4 : 3));
      InferredOutput s{v(0).desc, v(0).rows};
      if (mm) {
        const auto& x = v(0).desc;
        const auto& w = v(1).desc;
        TS_TRY(expect(w.shape.rank == 2 && x.shape.rank == 2 && x.shape[1] == w.shape[1], op, "expects x[T, K] and w[N, K]"));
        s = f32_rows(v(0).rows, x.shape[0], w.shape[0]);
      }
      const Value& r = v(mm ? 2 : 1);
      TS_TRY(expect(r.desc.shape == s.desc.shape && r.rows == s.rows, op, desc_of(r) + " does not match " + s.desc.to_string()));
      TS_TRY(expect(v(mm ? 3 : 2).desc.shape.numel() == s.desc.shape.last(), op, "norm weight does not match the row width"));
      return std::vector{s, s};
    }
    case OpKind::rope_kv_append: {
      // (q, k, v, positions, slot_mapping, k_pool, v_pool[, table | frequency factors]) -> (rope(q), k_pool', v_pool')
      TS_TRY(expect(in.size() == 7 || in.size() == 8, op, "expects 7 inputs (q, k, v, positions, slot_mapping, k_pool, v_pool) or 8 (and a table or frequency factors), got " + std::to_string(in.size())));
      const auto& p = std::get<RopeKvAppendParams>(params);
      TS_TRY(check_rotation(op, p.rope));
      if (in.size() == 8) TS_TRY(check_rope_extra(op, p.rope, v(7)));
      const int64_t width = (int64_t)p.kv.n_kv_heads * p.kv.head_dim;
      TS_TRY(expect(p.kv.head_dim == p.rope.head_dim, op, "rope and KV head_dim differ"));
      TS_TRY(expect(v(0).desc.shape.last() == (int64_t)p.rope.n_heads * p.rope.head_dim, op, "q width is not n_heads * head_dim"));
      TS_TRY(expect(v(1).desc.shape.last() == width && v(2).desc.shape.last() == width, op, "k/v width is not n_kv_heads * head_dim"));
      TS_TRY(expect(v(5).desc.shape.last() == width && v(6).desc.shape.last() == width, op, "pool width is not n_kv_heads * head_dim"));
      TS_TRY(check_kv_pools(op, v(5), v(6), p.kv.head_dim));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}, InferredOutput{v(5).desc, RowCount::fixed},
                         InferredOutput{v(6).desc, RowCount::fixed}};
    }
    case OpKind::copy: {
      TS_TRY(arity(1));
      TS_TRY(expect(v(0).kind == ValueKind::computed, op, "copies a computed value (weights and pools are bound on each device)"));
      return std::vector{InferredOutput{v(0).desc, v(0).rows}};
    }
  }
  return internal_error("infer_outputs: unknown op");
}

}  // namespace tessera::graph
