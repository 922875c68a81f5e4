#pragma once
// The ranks of a tensor-parallel model as NCCL (CUDA) or RCCL (ROCm) sees
// them: one device per rank, bootstrapped through the HostGroup (rank 0 makes
// the unique id, the group broadcasts it, every rank joins with its own
// device current). Collectives are queued on a stream, never waited for on
// the host, except where the caller passes no stream (then this
// communicator's own, synchronized before returning).
//
// A plan's all_reduce and all_gather nodes call the *_on forms with the raw
// stream the executable runs or captures its step on. NCCL's calls can be
// captured into a CUDA graph from NCCL 2.9, so a CUDA step with collectives
// is one graph launch like any other (capturable()); RCCL's capture is not
// relied on here (no AMD GPU to test it with), so ROCm plans with
// collectives launch their dispatches one by one.
//
// Not thread-safe: one communicator is used by one stream's steps at a time,
// in the same order on every rank (core/hal/communicator.h).
#include <memory>
#include <span>
#include <string>

#include "backends/cuda/gpu_context.h"
#include "core/hal/communicator.h"

struct ncclComm;  // ncclComm_t in NCCL and RCCL alike

namespace tessera::gpu {

struct NcclApi;  // backends/cuda/gpu_nccl.h

class GpuCommunicator final : public Communicator {
 public:
  // Every rank of `group` calls this at the same time, each with its own
  // device; it returns once all have joined (or every rank has failed, each
  // saying why). Also runs one tiny all_reduce and all_gather, so that the
  // library's connections exist before a step's graph is captured.
  static Expected<std::shared_ptr<GpuCommunicator>> create(std::shared_ptr<GpuContext> ctx, HostGroup& group);
  ~GpuCommunicator() override;
  GpuCommunicator(const GpuCommunicator&) = delete;
  GpuCommunicator& operator=(const GpuCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override;
  Status all_reduce_sum(void* data, size_t count, DType dtype, Stream* stream) override;
  Status all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype, Stream* stream) override;
  // With a stream: queued on it (later work of the stream sees it done).
  // Without: done when the call returns.
  Status send(const void* data, size_t bytes, int peer, Stream* stream) override;
  Status recv(void* data, size_t bytes, int peer, Stream* stream) override;

  // The same on a raw stream of this device (the executable's, or one being
  // captured). all_reduce may be out of place (send != recv).
  Status all_reduce_sum_on(const void* send, void* recv, size_t count, DType dtype, gpuStream_t stream);
  // Equal counts: one ncclAllGather; unequal: one ncclBroadcast per rank
  // with a count, grouped into one launch.
  Status all_gather_on(const void* send, void* recv, std::span<const size_t> counts, DType dtype, gpuStream_t stream);

  // Whether a step's collectives may be captured into its graph.
  bool capturable() const { return capturable_; }
  const GpuContext& context() const { return *ctx_; }

 private:
  explicit GpuCommunicator(std::shared_ptr<GpuContext> ctx) : ctx_(std::move(ctx)) {}
  // The raw stream behind `s` (a GpuStream of this device), or this
  // communicator's own for null; `wait` says the caller must synchronize it.
  Status stream_for(Stream* s, gpuStream_t& out, bool& wait) const;
  Status finish(gpuStream_t s, bool wait) const;
  Status warm_up();

  std::shared_ptr<GpuContext> ctx_;
  const NcclApi* api_ = nullptr;
  ncclComm* comm_ = nullptr;
  gpuStream_t own_stream_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  bool capturable_ = false;
};

}  // namespace tessera::gpu
