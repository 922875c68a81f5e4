#include "backends/cuda/gpu_executable.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "backends/cuda/gpu_kernel_table.h"
#include "backends/cuda/gpu_status.h"
#include "backends/cuda/gpu_stream.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu {

namespace {

constexpr uint64_t kStepAlign = 256;  // each step array starts where any kernel may read it vectorized

bool graphs_enabled() {
  const char* v = std::getenv("TESSERA_GPU_GRAPHS");
  return !(v && std::string_view(v) == "0");
}

}  // namespace

Expected<std::unique_ptr<GpuExecutable>> GpuExecutable::create(std::shared_ptr<GpuContext> ctx, const Plan& plan,
                                                               std::span<Buffer* const> bound,
                                                               std::shared_ptr<GpuCommunicator> comm) {
  std::unique_ptr<GpuExecutable> exe(new GpuExecutable(std::move(ctx), plan, std::move(comm)));
  exe->limits_ = step_limits(plan);
  exe->use_graphs_ = plan.bucket.max_tokens <= kGraphMaxTokens && graphs_enabled();
  TS_TRY(exe->bind_buffers(bound));
  TS_TRY(exe->bind_dispatches());
  const bool collectives = std::any_of(plan.dispatches.begin(), plan.dispatches.end(), [](const Dispatch& d) {
    return d.op == OpKind::all_reduce || d.op == OpKind::all_gather;
  });
  if (collectives && !exe->comm_->capturable()) exe->use_graphs_ = false;
  return exe;
}

Status GpuExecutable::bind_buffers(std::span<Buffer* const> bound) {
  const size_t n = plan_.buffers.size();
  buffers_.assign(n, nullptr);
  field_offsets_.assign(n, 0);
  uint64_t step_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const PlanBuffer& pb = plan_.buffers[i];
    Buffer* given = i < bound.size() ? bound[i] : nullptr;
    if (is_bound(pb.role) || (pb.role == BufferRole::arena && given)) {
      if (!given) return invalid_argument("compile: plan buffer " + std::to_string(i) + " (" + pb.name + ") must be bound");
      GpuBuffer* g = gpu_buffer(*given);
      if (!g || g->context().ordinal() != ctx_->ordinal())
        return invalid_argument("compile: plan buffer " + std::to_string(i) + " (" + pb.name + ") is not a buffer of " +
                                TESSERA_GPU_BACKEND ":" + std::to_string(ctx_->ordinal()));
      if (g->size() < pb.bytes)
        return invalid_argument("compile: plan buffer " + std::to_string(i) + " (" + pb.name + ") needs " +
                                std::to_string(pb.bytes) + " bytes; the bound buffer has " + std::to_string(g->size()));
      buffers_[i] = g;
    } else if (pb.role == BufferRole::arena) {
      TS_ASSIGN_OR_RETURN(auto arena, GpuBuffer::create(ctx_, pb.bytes, MemoryUse::activations));
      buffers_[i] = arena.get();
      owned_.push_back(std::move(arena));
    } else {  // step_input: a slice of the one step block
      field_offsets_[i] = step_bytes;
      step_bytes += (pb.bytes + kStepAlign - 1) / kStepAlign * kStepAlign;
    }
  }
  TS_ASSIGN_OR_RETURN(step_block_, GpuBuffer::create(ctx_, step_bytes, MemoryUse::step_input));
  for (size_t i = 0; i < n; ++i) {
    if (plan_.buffers[i].role != BufferRole::step_input) continue;
    owned_.push_back(GpuBuffer::view(*step_block_, field_offsets_[i], plan_.buffers[i].bytes, MemoryUse::step_input));
    buffers_[i] = owned_.back().get();
  }
  packed_.assign(step_bytes, std::byte{0});
  return Status::ok();
}

Status GpuExecutable::bind_dispatches() {
  const GpuKernelTable table(comm_ ? comm_->name() : "");
  uint64_t scratch = 256, gathered = 0;
  for (const Dispatch& d : plan_.dispatches) {  // the executable's own copy: BoundDispatch points into it
    // What placement should never have given this device (hand-written IR) is refused here, with the table's reason.
    OpQuery q{d.op, DType::f32, d.inputs.size() > 1 ? d.inputs[1].desc.dtype : DType::f32};
    if (d.op == OpKind::embedding) q.weight_dtype = d.inputs[0].desc.dtype;
    q.params = d.params;
    q.rope_table = rope_extra(d.op, d.inputs) == RopeExtra::table;
    q.rope_freq_factors = rope_extra(d.op, d.inputs) == RopeExtra::factors;
    if (const int pool = k_pool_input(d.op); pool >= 0 && (size_t)pool < d.inputs.size()) q.kv_dtype = d.inputs[(size_t)pool].desc.dtype;
    const KernelChoice k = table.query(q);
    if (!k.supported) return unsupported(std::string(TESSERA_GPU_BACKEND ": ") + d.label + ": " + k.reason);
    for (size_t i = 0; i < d.inputs.size(); ++i)
      if (d.inputs[i].layout != WeightLayout::rows)
        return unsupported(std::string(TESSERA_GPU_BACKEND ": ") + d.label + ": input " + std::to_string(i) + " has layout=" +
                           std::string(name(d.inputs[i].layout)) + "; this backend reads the standard row layout only");
    BoundDispatch bd{d.op, d.params, {}, {}, &d};
    auto bind = [&](const PlanTensor& t) { return BoundTensor{buffers_[t.buffer]->data() + t.offset, t.desc, t.rows}; };
    for (const auto& t : d.inputs) bd.in.push_back(bind(t));
    for (const auto& t : d.outputs) bd.out.push_back(bind(t));
    // The fused matmuls whose epilogue is a second kernel stage the product [rows, n] here; rope_kv_append its rotated K.
    const int64_t max_rows = d.outputs.empty() ? 0 : d.outputs[0].desc.shape[0];
    if (d.op == OpKind::matmul_silu_mul || d.op == OpKind::matmul_qkv || d.op == OpKind::matmul_epilogue)
      scratch = std::max<uint64_t>(scratch, (uint64_t)(max_rows * d.inputs[1].desc.shape[0]) * 4);
    if (d.op == OpKind::rope_kv_append) {
      const auto& p = std::get<RopeKvAppendParams>(d.params);
      scratch = std::max<uint64_t>(scratch, (uint64_t)(max_rows * p.kv.n_kv_heads * p.kv.head_dim) * 4);
    }
    // paged_attention's split decode keeps its chunk partials here, sized for the bucket's largest step.
    if (d.op == OpKind::paged_attention)
      scratch = std::max<uint64_t>(scratch, kernels::paged_attention_workspace_bytes(std::get<AttentionParams>(d.params),
                                                                                     plan_.bucket.max_tokens,
                                                                                     plan_.bucket.max_blocks_per_seq));
    // all_gather's blocks land here before their rows are interleaved: sized once, for the bucket's rows.
    if (d.op == OpKind::all_gather) {
      const auto& p = std::get<AllGatherParams>(d.params);
      if (p.world != comm_->size())
        return invalid_argument(std::string(TESSERA_GPU_BACKEND ": ") + d.label + " gathers over " + std::to_string(p.world) +
                                " ranks; the communicator has " + std::to_string(comm_->size()));
      // The count each rank sends is its share's: an input of another width would read past it or leave some unsent.
      const int64_t share = shard_range(p.total, p.world, comm_->rank()).size();
      if (d.inputs[0].desc.shape.last() != share || d.outputs[0].desc.shape.last() != p.total)
        return invalid_argument(std::string(TESSERA_GPU_BACKEND ": ") + d.label + ": rank " + std::to_string(comm_->rank()) +
                                " gathers " + std::to_string(d.inputs[0].desc.shape.last()) + " columns into " +
                                std::to_string(d.outputs[0].desc.shape.last()) + "; its share of " + std::to_string(p.total) +
                                " is " + std::to_string(share));
      gathered = std::max<uint64_t>(gathered, (uint64_t)(max_rows * p.total) * 4);
      gather_counts_.resize((size_t)p.world);
    }
    dispatches_.push_back(std::move(bd));
  }
  TS_ASSIGN_OR_RETURN(scratch_, GpuBuffer::create(ctx_, scratch, MemoryUse::activations));
  if (gathered > 0) {
    TS_ASSIGN_OR_RETURN(gathered_, GpuBuffer::create(ctx_, gathered, MemoryUse::activations));
  }
  return Status::ok();
}

GpuExecutable::~GpuExecutable() {
  if (graphs_.empty()) return;
  (void)ctx_->make_current();
  // A replay may still be queued on some stream: drained first, as the
  // buffers it reads are (executables go at model unload, never per step).
  (void)gpuDeviceSynchronize();
  for (Graph& g : graphs_) (void)gpuGraphExecDestroy(g.exec);
}

Status GpuExecutable::upload_step(const StepArgs& a, GpuStream& stream) {
  uint64_t used = 0;
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const PlanBuffer& pb = plan_.buffers[i];
    if (pb.role != BufferRole::step_input) continue;
    const int32_t* src = step_field_data(a, pb.field);
    const uint64_t bytes = (uint64_t)step_field_count(a, pb.field, plan_.bucket) * sizeof(int32_t);
    if (src && bytes > 0) std::memcpy(packed_.data() + field_offsets_[i], src, std::min(bytes, pb.bytes));
    used = std::max(used, field_offsets_[i] + pb.bytes);
  }
  if (used == 0) return Status::ok();
  return stream.upload(*step_block_, 0, std::span<const std::byte>(packed_.data(), used));
}

Status GpuExecutable::launch_all(const StepArgs& a, gpuStream_t stream) const {
  for (const BoundDispatch& d : dispatches_) TS_TRY(launch(d, a, stream));
  return Status::ok();
}

Expected<gpuGraphExec_t> GpuExecutable::graph_for(const StepArgs& a) {
  for (const Graph& g : graphs_)
    if (g.logit_rows == a.n_logit_rows) return g.exec;
  // Captured on a stream of its own, thread-local mode, so that no other
  // thread's work on the device lands in the graph: the kernels are recorded,
  // not run. Every pointer they take (weights, pools, arena, step block,
  // scratch) is fixed for the executable's life.
  gpuStream_t capture = nullptr;
  TS_GPU_TRY(gpuStreamCreateWithFlags(&capture, gpuStreamNonBlocking));
  Status launched = Status::ok();
  gpuGraph_t graph = nullptr;
  gpuError_t e = gpuStreamBeginCapture(capture, gpuStreamCaptureModeThreadLocal);
  if (e == gpuSuccess) {
    launched = launch_all(a, capture);
    e = gpuStreamEndCapture(capture, &graph);  // ends the capture even after a failed launch
  }
  (void)gpuStreamDestroy(capture);
  gpuGraphExec_t exec = nullptr;
  if (launched.is_ok() && e == gpuSuccess) e = gpuGraphInstantiate(&exec, graph);  // the exec holds its own copy
  if (graph) (void)gpuGraphDestroy(graph);
  if (!launched.is_ok()) return launched;
  if (e != gpuSuccess) return gpu_failed("capturing and instantiating a step's graph", e);
  graphs_.push_back({a.n_logit_rows, exec});
  return exec;
}

Status GpuExecutable::run(const StepArgs& args, GpuStream& stream) {
  TS_TRY(check_step_args(plan_.bucket, limits_, args));
  if (!use_graphs_) {
    TS_TRY(upload_step(args, stream));
    return launch_all(args, stream.handle());
  }
  const int32_t logit_rows = args.n_logit_rows > 0 ? (int32_t)std::bit_ceil((uint32_t)args.n_logit_rows) : 0;
  pad_step(args, plan_.bucket, std::min(logit_rows, plan_.bucket.max_logit_rows), padded_);
  const StepArgs padded = padded_.args();
  TS_ASSIGN_OR_RETURN(gpuGraphExec_t graph, graph_for(padded));
  TS_TRY(upload_step(padded, stream));
  TS_GPU_TRY(gpuGraphLaunch(graph, stream.handle()));
  return Status::ok();
}

}  // namespace tessera::gpu
