#pragma once
// A CUDA/HIP stream behind the HAL's Stream, with its own ring of pinned
// staging slots for uploads and downloads (an upload takes the caller's
// bytes before it returns and the device copies them from pinned memory; a
// download lands in a slot and a host function queued behind it copies it
// out, so neither waits for the device), and the events that order streams.
#include <array>
#include <memory>
#include <vector>

#include "backends/cuda/gpu_buffer.h"
#include "core/hal/event.h"
#include "core/hal/stream.h"

namespace tessera::gpu {

class GpuEvent final : public Event {
 public:
  static Expected<std::unique_ptr<GpuEvent>> create(std::shared_ptr<GpuContext> ctx);
  ~GpuEvent() override;
  bool query() override;
  Status synchronize() override;

  gpuEvent_t handle() const { return event_; }
  const GpuContext& context() const { return *ctx_; }
  void mark_recorded() { recorded_ = true; }

 private:
  explicit GpuEvent(std::shared_ptr<GpuContext> ctx) : ctx_(std::move(ctx)) {}
  std::shared_ptr<GpuContext> ctx_;
  gpuEvent_t event_ = nullptr;
  bool recorded_ = false;  // an event never recorded is complete
};

class GpuStream final : public Stream {
 public:
  static Expected<std::unique_ptr<GpuStream>> create(std::shared_ptr<GpuContext> ctx);
  ~GpuStream() override;

  Status upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) override;
  Status download(std::span<std::byte> dst, Buffer& src, uint64_t offset) override;
  Status copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) override;
  Status copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) override;
  Status run(Executable& exe, const StepArgs& args) override;
  Status record(Event& e) override;
  Status wait(Event& e) override;
  Status synchronize() override;

  gpuStream_t handle() const { return stream_; }
  const GpuContext& context() const { return *ctx_; }

 private:
  explicit GpuStream(std::shared_ptr<GpuContext> ctx) : ctx_(std::move(ctx)) {}
  // A pinned slot of the ring, free once its event (recorded after the
  // device copy out of it, or the host copy out of it) has completed.
  struct StagingSlot {
    std::unique_ptr<GpuBuffer> memory;
    gpuEvent_t copied = nullptr;
    bool pending = false;
  };
  static constexpr int kSlots = 4;
  static constexpr uint64_t kSlotBytes = uint64_t{4} << 20;
  // Moves `bytes` through the ring a slot at a time; leg(slot, done, n) queues one piece's copies.
  template <typename Leg>
  Status through_ring(uint64_t bytes, Leg&& leg);
  GpuBuffer* ours(Buffer& b, const char* what, Status& why);

  std::shared_ptr<GpuContext> ctx_;
  gpuStream_t stream_ = nullptr;
  std::array<StagingSlot, kSlots> ring_;
  int next_ = 0;
  // copy_blocks' list of pools and block pairs: built here, read by its kernel there.
  std::vector<std::byte> copy_list_host_;
  std::unique_ptr<GpuBuffer> copy_list_;
};

}  // namespace tessera::gpu
