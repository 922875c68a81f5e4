#pragma once
// A Plan compiled for one GPU: bound buffers checked, the arena and the step
// block allocated, every dispatch resolved to a kernel. The step's arrays
// (token ids, positions, slot mapping, query starts, lengths, block tables,
// logit rows) are packed into one host block and uploaded in one copy; then
// the dispatches run, as a CUDA/HIP graph or launched one by one.
//
// Graphs: a bucket of at most kGraphMaxTokens tokens runs every step as one
// graph launch. Its dispatches are captured once, with the bucket's full
// counts (the step padded to them, core/hal/step_padding.h), so that one
// graph serves every step of the bucket: per logit-row count rounded up to a
// power of two, each captured on its first step (a decode bucket has one).
// Larger buckets (prefill) launch their dispatches with the step's own
// counts: there a launch's cost is small beside its kernel's, and padding
// would cost up to twice the work. TESSERA_GPU_GRAPHS=0 turns graphs off.
//
// Collectives (all_reduce, all_gather) call the device's communicator on the
// step's stream and are captured with the rest where the communicator allows
// it (GpuCommunicator::capturable: NCCL from 2.9); a plan with collectives
// on a communicator that does not launches its dispatches one by one.
#include <memory>
#include <vector>

#include "core/hal/step_padding.h"

#include "backends/bound_dispatch.h"
#include "backends/cuda/gpu_buffer.h"
#include "backends/cuda/gpu_communicator.h"
#include "core/hal/step_check.h"
#include "core/hal/stream.h"

namespace tessera::gpu {

class GpuStream;

// The largest token bucket that runs as a graph (vLLM's default capture limit).
inline constexpr int32_t kGraphMaxTokens = 512;

class GpuExecutable final : public Executable {
 public:
  // `comm`: the device's communicator, for the plan's collectives; may be null.
  static Expected<std::unique_ptr<GpuExecutable>> create(std::shared_ptr<GpuContext> ctx, const Plan& plan,
                                                         std::span<Buffer* const> bound,
                                                         std::shared_ptr<GpuCommunicator> comm = nullptr);
  ~GpuExecutable() override;
  const Plan& plan() const override { return plan_; }
  Buffer& buffer(uint32_t id) override { return *buffers_[id]; }

  // Checks the step against the bucket and the pools, uploads its arrays and
  // queues the dispatches on `stream`.
  Status run(const StepArgs& args, GpuStream& stream);

 private:
  GpuExecutable(std::shared_ptr<GpuContext> ctx, const Plan& plan, std::shared_ptr<GpuCommunicator> comm)
      : ctx_(std::move(ctx)), plan_(plan), comm_(std::move(comm)) {}
  Status bind_buffers(std::span<Buffer* const> bound);
  Status bind_dispatches();
  // Queues one dispatch's kernels (backends/cuda/gpu_dispatch.cpp).
  Status launch(const BoundDispatch& d, const StepArgs& a, gpuStream_t stream) const;
  Status launch_all(const StepArgs& a, gpuStream_t stream) const;
  // The ranks' [rows, C_r] blocks gathered into gathered_, then interleaved into [rows, total].
  Status all_gather(const BoundDispatch& d, int64_t rows, gpuStream_t stream) const;
  // Packs the step's arrays into packed_ and uploads them in one copy.
  Status upload_step(const StepArgs& a, GpuStream& stream);
  // The graph for steps padded to `a`'s counts, captured on first use.
  Expected<gpuGraphExec_t> graph_for(const StepArgs& a);

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
  std::shared_ptr<GpuCommunicator> comm_;  // kept alive while a captured graph refers to it
  std::unique_ptr<GpuBuffer> gathered_;    // all_gather's blocks, rank after rank, for the bucket's rows
  mutable std::vector<size_t> gather_counts_;  // all_gather's per-rank counts, refilled per dispatch

  struct Graph {
    int32_t logit_rows = 0;
    gpuGraphExec_t exec = nullptr;
  };
  bool use_graphs_ = false;
  std::vector<Graph> graphs_;
  StepArrays padded_;
};

}  // namespace tessera::gpu
