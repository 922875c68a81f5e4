#pragma once
// A Plan compiled for one GPU: bound buffers checked, the arena and the step
// block allocated, every dispatch resolved to a kernel. The step's arrays
// (token ids, positions, slot mapping, query starts, lengths, block tables,
// logit rows) are packed into one host block and uploaded in one copy, then
// the dispatches are queued on the stream.
#include <memory>
#include <vector>

#include "backends/bound_dispatch.h"
#include "backends/cuda/gpu_buffer.h"
#include "core/hal/step_check.h"
#include "core/hal/stream.h"

namespace tessera::gpu {

class GpuStream;


class GpuExecutable final : public Executable {
 public:
  static Expected<std::unique_ptr<GpuExecutable>> create(std::shared_ptr<GpuContext> ctx, const Plan& plan,
                                                         std::span<Buffer* const> bound);
  const Plan& plan() const override { return plan_; }
  Buffer& buffer(uint32_t id) override { return *buffers_[id]; }

  // Checks the step against the bucket and the pools, uploads its arrays and
  // queues the dispatches on `stream`.
  Status run(const StepArgs& args, GpuStream& stream);

 private:
  GpuExecutable(std::shared_ptr<GpuContext> ctx, const Plan& plan) : ctx_(std::move(ctx)), plan_(plan) {}
  Status bind_buffers(std::span<Buffer* const> bound);
  Status bind_dispatches();
  // Queues one dispatch's kernels (backends/cuda/gpu_dispatch.cpp).
  Status launch(const BoundDispatch& d, const StepArgs& a, gpuStream_t stream) const;

  std::shared_ptr<GpuContext> ctx_;
  Plan plan_;
  StepLimits limits_;
  std::vector<GpuBuffer*> buffers_;                // by plan buffer id
  std::vector<std::unique_ptr<GpuBuffer>> owned_;  // the arena, the step block and its views
  std::unique_ptr<GpuBuffer> step_block_;
  std::vector<uint64_t> field_offsets_;  // in the step block, by plan buffer id (step inputs)
  std::vector<std::byte> packed_;        // the host side of one step's block
  std::vector<BoundDispatch> dispatches_;
  std::unique_ptr<GpuBuffer> scratch_;   // fused matmuls' products, rotated K, attention's split partials
};

}  // namespace tessera::gpu
