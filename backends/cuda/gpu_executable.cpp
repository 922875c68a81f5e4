#include "backends/cuda/gpu_executable.h"

#include <cstring>

#include "backends/cuda/gpu_stream.h"

namespace tessera::gpu {

namespace {

constexpr uint64_t kStepAlign = 256;  // each step array starts where any kernel may read it vectorized

}  // namespace

Expected<std::unique_ptr<GpuExecutable>> GpuExecutable::create(std::shared_ptr<GpuContext> ctx, const Plan& plan,
                                                               std::span<Buffer* const> bound) {
  // The kernel table refuses every op for now (docs/backends.md, "CUDA and
  // ROCm"), so placement never gives this device a dispatch; a plan that
  // has one anyway (hand-written IR) is refused here rather than skipped.
  for (const Dispatch& d : plan.dispatches)
    return unsupported(std::string(TESSERA_GPU_BACKEND ": no kernel for ") + std::string(name(d.op)) + " (node " + d.label +
                       ") in this build");
  std::unique_ptr<GpuExecutable> exe(new GpuExecutable(std::move(ctx), plan));
  exe->limits_ = step_limits(plan);
  TS_TRY(exe->bind_buffers(bound));
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

Status GpuExecutable::run(const StepArgs& args, GpuStream& stream) {
  TS_TRY(check_step_args(plan_.bucket, limits_, args));
  uint64_t used = 0;
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const PlanBuffer& pb = plan_.buffers[i];
    if (pb.role != BufferRole::step_input) continue;
    const int32_t* src = step_field_data(args, pb.field);
    const uint64_t bytes = (uint64_t)step_field_count(args, pb.field, plan_.bucket) * sizeof(int32_t);
    if (src && bytes > 0) std::memcpy(packed_.data() + field_offsets_[i], src, std::min(bytes, pb.bytes));
    used = std::max(used, field_offsets_[i] + pb.bytes);
  }
  if (used > 0) TS_TRY(stream.upload(*step_block_, 0, std::span<const std::byte>(packed_.data(), used)));
  return Status::ok();
}

}  // namespace tessera::gpu
