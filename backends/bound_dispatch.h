#pragma once
// A plan's dispatch with every tensor at its address in one device's memory,
// and the kernel arguments (kernels/kernel_args.h) built from it: the one
// binding of a dispatch's inputs and outputs to the arguments of its op, for
// every backend whose kernels take those structs (the CPU's, CUDA's and
// ROCm's). A backend fills in what only it has (workspace, scratch, tile).
#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "core/hal/plan.h"
#include "kernels/kernel_args.h"

namespace tessera {

struct BoundTensor {
  std::byte* data = nullptr;
  TensorDesc desc;
  RowCount rows = RowCount::fixed;
};

struct BoundDispatch {
  OpKind op;
  OpParams params;
  std::vector<BoundTensor> in, out;
  const Dispatch* source = nullptr;
};

// The rows a tensor has in this step.
inline int64_t rows_of(const BoundTensor& t, const StepArgs& a) {
  switch (t.rows) {
    case RowCount::fixed: return t.desc.shape[0];
    case RowCount::tokens: return a.n_tokens;
    case RowCount::logit_rows: return a.n_logit_rows;
  }
  return 0;
}

// The input that is a dispatch's K pool (its V pool follows), or -1 for an op that reads none.
inline int k_pool_input(OpKind op) {
  return op == OpKind::kv_append ? 3 : op == OpKind::paged_attention ? 1 : op == OpKind::rope_kv_append ? 5 : -1;
}

inline float* bound_f32(const BoundTensor& t) { return reinterpret_cast<float*>(t.data); }
inline int32_t* bound_i32(const BoundTensor& t) { return reinterpret_cast<int32_t*>(t.data); }

// What the optional last input of a rope (its third) or a rope_kv_append (its
// eighth) is: a folded cos/sin table [P, rot_dims/2, 2] or frequency factors
// [rot_dims/2], told apart by rank.
enum class RopeExtra : uint8_t { none, table, factors };

template <typename Tensor>
RopeExtra rope_extra(OpKind op, const std::vector<Tensor>& inputs) {
  const size_t with_extra = op == OpKind::rope ? 3 : op == OpKind::rope_kv_append ? 8 : 0;
  if (with_extra == 0 || inputs.size() != with_extra) return RopeExtra::none;
  return inputs.back().desc.shape.rank == 1 ? RopeExtra::factors : RopeExtra::table;
}

// x = in[0], w = in[1], y = out[0]: how every matmul-rooted dispatch binds its matmul.
inline kernels::MatmulArgs bound_matmul_args(const BoundDispatch& d, int64_t rows) {
  kernels::MatmulArgs m;
  m.x = bound_f32(d.in[0]);
  m.w = d.in[1].data;
  m.w_dtype = d.in[1].desc.dtype;
  m.w_layout = d.source->inputs[1].layout;
  m.y = bound_f32(d.out[0]);
  m.m = rows;
  m.n = d.in[1].desc.shape[0];
  m.k = d.in[1].desc.shape[1];
  m.tile = d.source->tile;
  return m;
}

// rope over out[0], which holds in[0]'s rows (the caller copies them there first when they differ).
inline kernels::RopeArgs bound_rope_args(const BoundDispatch& d, int64_t rows) {
  const RopeExtra extra = rope_extra(d.op, d.in);
  kernels::RopeArgs r{bound_f32(d.out[0]), bound_i32(d.in[1]), rows, std::get<RopeParams>(d.params)};
  if (extra == RopeExtra::table) r.table = bound_f32(d.in[2]), r.table_rows = d.in[2].desc.shape[0];
  if (extra == RopeExtra::factors) r.freq_factors = bound_f32(d.in[2]);
  return r;
}

inline kernels::KvAppendArgs bound_kv_append_args(const BoundDispatch& d, const StepArgs& a) {
  kernels::KvAppendArgs kv;
  kv.k = bound_f32(d.in[0]);
  kv.v = bound_f32(d.in[1]);
  kv.slot_mapping = bound_i32(d.in[2]);
  kv.n_tokens = a.n_tokens;
  kv.k_pool = d.in[3].data;
  kv.v_pool = d.in[4].data;
  kv.kv_dtype = d.in[3].desc.dtype;
  kv.num_slots = d.in[3].desc.shape[0];
  kv.p = std::get<KvCacheParams>(d.params);
  return kv;
}

// k_rot (scratch for the rotated K) is the caller's.
inline kernels::RopeKvAppendArgs bound_rope_kv_append_args(const BoundDispatch& d, const StepArgs& a) {
  kernels::RopeKvAppendArgs r;
  r.q = bound_f32(d.in[0]);
  r.q_out = bound_f32(d.out[0]);
  r.k = bound_f32(d.in[1]);
  r.v = bound_f32(d.in[2]);
  r.positions = bound_i32(d.in[3]);
  r.slot_mapping = bound_i32(d.in[4]);
  r.n_tokens = a.n_tokens;
  r.k_pool = d.in[5].data;
  r.v_pool = d.in[6].data;
  r.kv_dtype = d.in[5].desc.dtype;
  r.num_slots = d.in[5].desc.shape[0];
  r.p = std::get<RopeKvAppendParams>(d.params);
  const RopeExtra extra = rope_extra(d.op, d.in);
  if (extra == RopeExtra::factors) r.freq_factors = bound_f32(d.in[7]);
  if (extra == RopeExtra::table) r.table = bound_f32(d.in[7]), r.table_rows = d.in[7].desc.shape[0];
  return r;
}

// workspace is the caller's.
inline kernels::AttentionArgs bound_attention_args(const BoundDispatch& d, const StepArgs& a, int32_t max_blocks_per_seq) {
  kernels::AttentionArgs at;
  at.q = bound_f32(d.in[0]);
  at.out = bound_f32(d.out[0]);
  at.n_tokens = a.n_tokens;
  at.k_pool = d.in[1].data;
  at.v_pool = d.in[2].data;
  at.kv_dtype = d.in[1].desc.dtype;
  at.positions = bound_i32(d.in[3]);
  at.query_start = bound_i32(d.in[4]);
  at.seq_lens = bound_i32(d.in[5]);
  at.block_tables = bound_i32(d.in[6]);
  at.n_seqs = a.n_seqs;
  at.max_blocks_per_seq = max_blocks_per_seq;
  at.p = std::get<AttentionParams>(d.params);
  return at;
}

inline kernels::GatherRowsArgs bound_gather_rows_args(const BoundDispatch& d, const StepArgs& a, int64_t rows) {
  kernels::GatherRowsArgs g;
  g.x = d.in[0].data;
  g.rows = bound_i32(d.in[1]);
  g.out = d.out[0].data;
  g.n_rows = rows;
  g.n_src_rows = rows_of(d.in[0], a);
  g.row_bytes = (int64_t)d.in[0].desc.row_bytes();
  return g;
}

// An elementwise node's program over out[0]: a 1-D output is one row,
// otherwise rows of its last dimension.
inline kernels::ElementwiseArgs bound_elementwise_args(const BoundDispatch& d, int64_t rows) {
  kernels::ElementwiseArgs e;
  e.program = &std::get<ElementwiseProgram>(d.params);
  for (size_t i = 0; i < d.in.size(); ++i) e.inputs[i] = bound_f32(d.in[i]);
  e.out = bound_f32(d.out[0]);
  const bool one_row = d.out[0].desc.shape.rank == 1;
  e.rows = one_row ? 1 : rows;
  e.cols = one_row ? rows : d.out[0].desc.shape.last();
  return e;
}

}  // namespace tessera
