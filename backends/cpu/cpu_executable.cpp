#include "backends/cpu/cpu_executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/hal/step_check.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tessera::cpu {

namespace k = kernels::cpu;

namespace {

// Where a fused matmul's full product starts in the scratch buffer: after the
// quantized activations, cache-line aligned.
size_t fused_product_offset(size_t workspace_bytes) { return (workspace_bytes + 63) / 64 * 64; }

}  // namespace

Expected<std::unique_ptr<CpuExecutable>> CpuExecutable::create(const Plan& plan, std::span<Buffer* const> bound,
                                                               ParallelFor& pool, Communicator* comm) {
  std::unique_ptr<CpuExecutable> exe(new CpuExecutable(plan, pool, comm));
  const char* prof = std::getenv("TESSERA_PROFILE");
  exe->profile_ = prof && *prof && *prof != '0';
  exe->buffers_.resize(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& pb = plan.buffers[i];
    // An arena the caller binds is shared with its other plans (one per device, not one per bucket).
    const bool caller_arena = pb.role == BufferRole::arena && i < bound.size() && bound[i];
    if (is_bound(pb.role) || caller_arena) {
      if (i >= bound.size() || !bound[i] || !bound[i]->host_data())
        return invalid_argument("cpu: plan buffer '" + pb.name + "' is not bound to host memory");
      if (bound[i]->size() < pb.bytes)
        return invalid_argument("cpu: buffer bound to '" + pb.name + "' holds " + std::to_string(bound[i]->size()) +
                                " bytes; the plan needs " + std::to_string(pb.bytes));
      exe->buffers_[i] = bound[i];
    } else {
      auto* b = CpuBuffer::owned(pb.bytes, pb.role == BufferRole::arena ? MemoryUse::activations : MemoryUse::step_input);
      if (!b) return resource_exhausted("cpu: cannot allocate " + std::to_string(pb.bytes) + " bytes for '" + pb.name + "'");
      exe->owned_.emplace_back(b);
      exe->buffers_[i] = b;
    }
  }

  size_t scratch = 64;
  size_t gathered = 0;
  const int64_t max_context = (int64_t)plan.bucket.max_blocks_per_seq;
  exe->kv_slots_ = INT64_MAX;
  for (const Dispatch& d : exe->plan_.dispatches) {  // the executable's own copy: BoundDispatch keeps a pointer to it
    BoundDispatch bd{d.op, d.params, {}, {}, &d};
    auto bind = [&](const PlanTensor& t) {
      return BoundTensor{exe->buffers_[t.buffer]->host_data() + t.offset, t.desc, t.rows};
    };
    for (const auto& t : d.inputs) bd.in.push_back(bind(t));
    for (const auto& t : d.outputs) bd.out.push_back(bind(t));
    // A reordered weight is read right only as a matmul's weight or an embedding's table.
    for (size_t i = 0; i < d.inputs.size(); ++i) {
      const PlanTensor& t = d.inputs[i];
      if (t.layout == WeightLayout::rows) continue;
      if (!may_read_reordered_weight(d.op, i))
        return unsupported("cpu: " + d.label + ": input " + std::to_string(i) + " has layout=" + std::string(name(t.layout)) +
                           "; only a matmul's weight or an embedding's table may");
      TS_TRY(check_weight_layout(t.layout, t.desc.dtype, t.desc.shape, "cpu: " + d.label + ": weight"));
    }
    // The most rows this dispatch can see: its planned outermost dimension.
    const int64_t max_rows = d.outputs.empty() ? 0 : d.outputs[0].desc.shape[0];
    if (is_matmul_family(d.op)) {
      if (!k::matmul_supports(d.inputs[1].desc.dtype))
        return unsupported("cpu: " + d.label + ": no matmul kernel for " + std::string(name(d.inputs[1].desc.dtype)) + " weights");
      size_t need = k::matmul_workspace_bytes(d.inputs[1].desc.dtype, max_rows, d.inputs[0].desc.shape[1]);
      // The fused matmuls with a split or gated output stage the full product after the workspace.
      if (d.op == OpKind::matmul_silu_mul || d.op == OpKind::matmul_qkv)
        need = fused_product_offset(need) + (size_t)(max_rows * d.inputs[1].desc.shape[0]) * 4;
      scratch = std::max(scratch, need);
    }
    if (d.op == OpKind::rope_kv_append) {
      const auto& p = std::get<RopeKvAppendParams>(d.params);
      scratch = std::max(scratch, (size_t)(max_rows * p.kv.n_kv_heads * p.kv.head_dim) * 4);
      exe->kv_slots_ = std::min(exe->kv_slots_, d.inputs[5].desc.shape[0]);
      exe->block_size_ = p.kv.block_size;
    }
    if (d.op == OpKind::paged_attention) {
      const auto& p = std::get<AttentionParams>(d.params);
      exe->block_size_ = p.block_size;
      scratch = std::max(scratch, k::attention_workspace_bytes(
                                      p, {max_rows, plan.bucket.max_seqs, max_context * p.block_size, pool.num_threads()}));
      exe->kv_slots_ = std::min(exe->kv_slots_, d.inputs[1].desc.shape[0]);
    }
    if (d.op == OpKind::all_reduce || d.op == OpKind::all_gather || d.op == OpKind::send || d.op == OpKind::recv) {
      if (!comm)
        return invalid_argument("cpu: " + d.label + " is a collective (" + std::string(name(d.op)) +
                                   ") and this device was given no communicator (Device::use_communicator)");
      if (d.op == OpKind::all_gather) {
        const auto& p = std::get<AllGatherParams>(d.params);
        if (p.world != comm->size())
          return invalid_argument("cpu: " + d.label + " gathers over " + std::to_string(p.world) + " ranks; the communicator has " +
                                  std::to_string(comm->size()));
        gathered = std::max(gathered, (size_t)(max_rows * p.total) * 4);
        exe->gather_counts_.resize((size_t)p.world);
      }
    }
    if (d.op == OpKind::kv_append) {
      const auto& p = std::get<KvCacheParams>(d.params);
      exe->kv_slots_ = std::min(exe->kv_slots_, d.inputs[3].desc.shape[0]);
      exe->block_size_ = p.block_size;
    }
    // The pools a dispatch appends to: named to StepArgs::kv_written once it ran.
    std::vector<uint32_t> writes;
    if (d.op == OpKind::kv_append || d.op == OpKind::rope_kv_append) {
      const int k = k_pool_input(d.op);
      writes = {d.inputs[(size_t)k].buffer, d.inputs[(size_t)k + 1].buffer};
    }
    exe->kv_writes_.push_back(std::move(writes));
    exe->dispatches_.push_back(std::move(bd));
  }
  exe->rope_rows_ = step_limits(exe->plan_).rope_rows;
  if (exe->kv_slots_ == INT64_MAX) exe->kv_slots_ = 0;
  exe->kv_blocks_ = exe->block_size_ > 0 ? exe->kv_slots_ / exe->block_size_ : 0;
  exe->scratch_.reset(CpuBuffer::owned(scratch, MemoryUse::activations));
  if (!exe->scratch_) return resource_exhausted("cpu: cannot allocate " + std::to_string(scratch) + " bytes of kernel scratch");
  if (gathered) {
    exe->gathered_.reset(CpuBuffer::owned(gathered, MemoryUse::activations));
    if (!exe->gathered_) return resource_exhausted("cpu: cannot allocate " + std::to_string(gathered) + " bytes for all_gather");
  }
  return exe;
}

// Every index a kernel will follow is checked before any kernel runs
// (core/hal/step_check.h, shared with the other backends).
Status CpuExecutable::check_step(const StepArgs& a) const {
  return check_step_args(plan_.bucket, StepLimits{kv_slots_, kv_blocks_, block_size_, -1, rope_rows_}, a);
}

Status CpuExecutable::run(const StepArgs& args) {
  TS_TRY(check_step(args));
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const PlanBuffer& pb = plan_.buffers[i];
    if (pb.role != BufferRole::step_input) continue;
    const int32_t* src = step_field_data(args, pb.field);
    const int64_t n = step_field_count(args, pb.field, plan_.bucket);
    if (n > 0 && !src) return invalid_argument(std::string("step: ") + to_string(pb.field) + " is missing");
    if ((uint64_t)n * 4 > pb.bytes) return invalid_argument(std::string("step: ") + to_string(pb.field) + " exceeds the bucket");
    if (n > 0) std::memcpy(buffers_[i]->host_data(), src, (size_t)n * 4);
  }
  for (size_t i = 0; i < dispatches_.size(); ++i) {
    const BoundDispatch& d = dispatches_[i];
    if (!profile_) {
      TS_TRY(run_dispatch(d, args));
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      TS_TRY(run_dispatch(d, args));
      op_ns_[(size_t)d.op] += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      ++op_calls_[(size_t)d.op];
    }
    // The kernels are done when run_dispatch returns: the pool holds this step's K/V.
    if (args.kv_written.fn)
      for (uint32_t b : kv_writes_[i]) args.kv_written.fn(args.kv_written.ctx, plan_.buffers[b].name.c_str());
  }
  if (profile_) ++steps_;
  return Status::ok();
}

CpuExecutable::~CpuExecutable() {
  if (!profile_ || steps_ == 0) return;
  double total = 0;
  for (double t : op_ns_) total += t;
  std::fprintf(stderr, "profile: bucket of %d tokens, %llu steps, %.3f ms per step\n", plan_.bucket.max_tokens,
               (unsigned long long)steps_, total / 1e6 / (double)steps_);
  for (int i = 0; i < kOpKindCount; ++i)
    if (op_calls_[(size_t)i])
      std::fprintf(stderr, "profile:   %-16s %8.3f ms/step  %5.1f%%  %llu calls\n", std::string(name((OpKind)i)).c_str(),
                   op_ns_[(size_t)i] / 1e6 / (double)steps_, 100 * op_ns_[(size_t)i] / total, (unsigned long long)op_calls_[(size_t)i]);
}

// The shared binding (backends/bound_dispatch.h), with this executable's scratch as the workspace.
kernels::MatmulArgs CpuExecutable::matmul_args(const BoundDispatch& d, int64_t rows) const {
  kernels::MatmulArgs m = bound_matmul_args(d, rows);
  m.workspace = scratch_->host_data();
  return m;
}

Status CpuExecutable::run_dispatch(const BoundDispatch& d, const StepArgs& a) {
  const auto f32 = bound_f32;
  const auto i32 = bound_i32;
  const int64_t rows = d.out.empty() ? 0 : rows_of(d.out[0], a);
  switch (d.op) {
    case OpKind::embedding: {
      const auto& table = d.in[0];
      const int64_t vocab = table.desc.shape[0];
      const int32_t* ids = i32(d.in[1]);
      for (int64_t t = 0; t < rows; ++t)
        if (ids[t] < 0 || ids[t] >= vocab)
          return out_of_range("step: token id " + std::to_string(ids[t]) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
      k::embedding({table.data, table.desc.dtype, vocab, table.desc.shape[1], ids, rows, f32(d.out[0]), d.source->inputs[0].layout},
                   pool_);
      return Status::ok();
    }
    case OpKind::rms_norm:
      k::rms_norm({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows, d.in[0].desc.shape.last(), std::get<RmsNormParams>(d.params)}, pool_);
      return Status::ok();
    case OpKind::matmul: {
      const kernels::MatmulArgs m = matmul_args(d, rows);
      k::matmul(m, pool_);
      return Status::ok();
    }
    case OpKind::matmul_add:
    case OpKind::matmul_silu_mul:
    case OpKind::matmul_qkv: {
      kernels::MatmulArgs m = matmul_args(d, rows);
      if (d.op == OpKind::matmul_add) {
        k::matmul_add({m, f32(d.in[2])}, pool_);
        return Status::ok();
      }
      // The other fused epilogues read the product from scratch, past the matmul's own workspace.
      m.y = reinterpret_cast<float*>(scratch_->host_data() +
                                     fused_product_offset(k::matmul_workspace_bytes(m.w_dtype, rows, m.k)));
      if (d.op == OpKind::matmul_silu_mul) {
        k::matmul_silu_mul({m, f32(d.out[0])}, pool_);
        return Status::ok();
      }
      const auto& p = std::get<QkvSplitParams>(d.params);
      k::matmul_qkv({m, f32(d.out[0]), f32(d.out[1]), f32(d.out[2]), p.q_rows, p.kv_rows}, pool_);
      return Status::ok();
    }
    case OpKind::add_rms_norm:
      k::add_rms_norm({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), f32(d.out[1]), f32(d.in[2]), rows, d.in[0].desc.shape.last(),
                       std::get<RmsNormParams>(d.params)},
                      pool_);
      return Status::ok();
    case OpKind::matmul_add_rms_norm: {
      const kernels::MatmulArgs m = matmul_args(d, rows);
      k::matmul_add({m, f32(d.in[2])}, pool_);
      k::rms_norm({f32(d.out[0]), f32(d.in[3]), f32(d.out[1]), rows, m.n, std::get<RmsNormParams>(d.params)}, pool_);
      return Status::ok();
    }
    case OpKind::rope_kv_append: {
      kernels::RopeKvAppendArgs r = bound_rope_kv_append_args(d, a);
      r.k_rot = reinterpret_cast<float*>(scratch_->host_data());
      k::rope_kv_append(r, pool_);
      return Status::ok();
    }
    case OpKind::rope: {
      float* x = f32(d.out[0]);
      if (x != f32(d.in[0])) std::memcpy(x, f32(d.in[0]), (size_t)(rows * d.in[0].desc.shape.last()) * 4);
      k::rope(bound_rope_args(d, rows), pool_);
      return Status::ok();
    }
    case OpKind::kv_append:
      k::kv_append(bound_kv_append_args(d, a), pool_);
      return Status::ok();
    case OpKind::paged_attention: {
      kernels::AttentionArgs at = bound_attention_args(d, a, plan_.bucket.max_blocks_per_seq);
      at.workspace = scratch_->host_data();
      k::paged_attention(at, pool_);
      return Status::ok();
    }
    case OpKind::silu_mul:
      k::silu_mul({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * d.in[0].desc.shape.last()}, pool_);
      return Status::ok();
    case OpKind::gelu_mul:
      k::gelu_mul({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * d.in[0].desc.shape.last()}, pool_);
      return Status::ok();
    case OpKind::add:
      k::add({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * d.in[0].desc.shape.last()}, pool_);
      return Status::ok();
    case OpKind::mul:
      k::mul({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * d.in[0].desc.shape.last()}, pool_);
      return Status::ok();
    case OpKind::silu:
    case OpKind::gelu: {
      const kernels::UnaryArgs u{f32(d.in[0]), f32(d.out[0]), rows * d.in[0].desc.shape.last()};
      if (d.op == OpKind::silu) k::silu(u, pool_);
      else k::gelu(u, pool_);
      return Status::ok();
    }
    case OpKind::head_rms_norm: {
      const int64_t head_dim = d.in[1].desc.shape[0];
      k::head_rms_norm({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows, d.in[0].desc.shape.last() / head_dim, head_dim,
                        std::get<RmsNormParams>(d.params)},
                       pool_);
      return Status::ok();
    }
    case OpKind::scale:
      k::scale({f32(d.in[0]), f32(d.out[0]), rows * d.in[0].desc.shape.last(), std::get<ScaleParams>(d.params).scale}, pool_);
      return Status::ok();
    case OpKind::softcap:
      k::softcap({f32(d.in[0]), f32(d.out[0]), rows * d.in[0].desc.shape.last(), std::get<SoftcapParams>(d.params).cap}, pool_);
      return Status::ok();
    case OpKind::bias_add:
      k::bias_add({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows, d.in[0].desc.shape.last()}, pool_);
      return Status::ok();
    case OpKind::elementwise:
      k::elementwise(bound_elementwise_args(d, rows), pool_);
      return Status::ok();
    case OpKind::matmul_epilogue: {
      kernels::MatmulEpilogueArgs e{matmul_args(d, rows), {}};
      e.epilogue.program = &std::get<ElementwiseProgram>(d.params);
      for (size_t i = 2; i < d.in.size(); ++i) e.epilogue.inputs[i - 1] = f32(d.in[i]);
      k::matmul_epilogue(e, pool_);
      return Status::ok();
    }
    case OpKind::softmax: {
      float* x = f32(d.out[0]);
      if (x != f32(d.in[0])) std::memcpy(x, f32(d.in[0]), (size_t)(rows * d.in[0].desc.shape.last()) * 4);
      k::softmax({x, rows, d.in[0].desc.shape.last()}, pool_);
      return Status::ok();
    }
    case OpKind::argmax:
      k::argmax({f32(d.in[0]), i32(d.out[0]), rows, d.in[0].desc.shape.last()}, pool_);
      return Status::ok();
    case OpKind::gather_rows:
      k::gather_rows(bound_gather_rows_args(d, a, rows), pool_);
      return Status::ok();
    case OpKind::all_reduce: {
      float* y = f32(d.out[0]);
      const size_t n = (size_t)(rows * d.in[0].desc.shape.last());
      if (y != f32(d.in[0])) std::memcpy(y, f32(d.in[0]), n * 4);
      return comm_->all_reduce_sum(y, n, DType::f32, nullptr);
    }
    case OpKind::all_gather:
      return all_gather(d, rows);
    case OpKind::send: {
      const size_t bytes = (size_t)(rows * d.in[0].desc.row_bytes());
      TS_TRY(comm_->send(d.in[0].data, bytes, std::get<PeerParams>(d.params).peer, nullptr));
      if (d.out[0].data != d.in[0].data) std::memcpy(d.out[0].data, d.in[0].data, bytes);
      return Status::ok();
    }
    case OpKind::recv:
      return comm_->recv(d.out[0].data, (size_t)(rows * d.out[0].desc.row_bytes()), std::get<PeerParams>(d.params).peer, nullptr);
    case OpKind::copy:
      // Placement's copies between devices are moved by the runtime; this runs only in a graph on the CPU alone.
      std::memmove(d.out[0].data, d.in[0].data, (size_t)(rows * d.in[0].desc.row_bytes()));
      return Status::ok();
  }
  return internal_error("cpu: unknown op in " + d.source->label);
}

// The communicator gathers each rank's [rows, C_r] block whole, rank after
// rank; the rows of [rows, total] interleave them.
Status CpuExecutable::all_gather(const BoundDispatch& d, int64_t rows) {
  const auto& p = std::get<AllGatherParams>(d.params);
  for (int r = 0; r < p.world; ++r) gather_counts_[(size_t)r] = (size_t)(rows * shard_range(p.total, p.world, r).size());
  float* staged = reinterpret_cast<float*>(gathered_->host_data());
  TS_TRY(comm_->all_gather(bound_f32(d.in[0]), staged, gather_counts_, DType::f32, nullptr));
  float* y = bound_f32(d.out[0]);
  for (int r = 0; r < p.world; ++r) {
    const ShardRange s = shard_range(p.total, p.world, r);
    const float* part = staged + rows * s.begin;  // earlier ranks' blocks hold rows * s.begin values
    for (int64_t t = 0; t < rows; ++t) std::memcpy(y + t * p.total + s.begin, part + t * s.size(), (size_t)s.size() * 4);
  }
  return Status::ok();
}

}  // namespace tessera::cpu
