#pragma once
// A Vulkan stream (core/hal/stream.h), asynchronous: every call records its
// work into a command buffer and submits it to the device's one queue without
// waiting. Each submission starts with a barrier behind all earlier work on
// the queue, so a stream's work runs in the order it was given.
//   upload: the caller's bytes go into the stream's staging ring
//     (staging_ring.h) before the call returns; a queued copy moves them on.
//   download: a queued copy into the ring, and a host copy owed to the caller
//     (host_copies.h), run once the copy has finished and someone asks.
//   copy, copy_blocks: queued copies between buffers of the device.
//   run: the executable's next step slot is filled and its command buffer
//     submitted (executable.h).
//   wait: an event of this device makes the stream's next submission wait for
//     its timeline value on the queue; another device's is waited for here.
// Command buffers for copies come from a small pool the stream owns, each
// reused once the timeline passes its last submission.
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/vulkan/context.h"
#include "backends/vulkan/host_copies.h"
#include "backends/vulkan/staging_ring.h"
#include "core/hal/stream.h"

namespace tessera::vulkan {

// A value of the device's timeline semaphore, and the host copies of the
// stream that recorded it: complete when the queue has finished every
// submission up to the value and those copies have run.
class VulkanEvent final : public Event {
 public:
  explicit VulkanEvent(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  bool query() override;
  Status synchronize() override;
  const DeviceContext* context() const { return ctx_.get(); }
  uint64_t value() const { return value_; }
  void set(uint64_t value, std::shared_ptr<HostCopies> owed) {
    value_ = value;
    owed_ = std::move(owed);
  }

 private:
  std::shared_ptr<DeviceContext> ctx_;
  uint64_t value_ = 0;
  std::shared_ptr<HostCopies> owed_;  // shared: the event may outlive the stream
};

class VulkanStream final : public Stream {
 public:
  static Expected<std::unique_ptr<VulkanStream>> create(std::shared_ptr<DeviceContext> ctx);
  // Waits for the stream's work and runs the host copies it owes.
  ~VulkanStream() override;
  Status upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) override;
  Status download(std::span<std::byte> dst, Buffer& src, uint64_t offset) override;
  Status copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) override;
  Status copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) override;
  Status run(Executable& exe, const StepArgs& args) override;
  Status record(Event& e) override;
  Status wait(Event& e) override;
  Status synchronize() override;

 private:
  explicit VulkanStream(std::shared_ptr<DeviceContext> ctx);
  // A pooled command buffer, begun, with the barrier behind earlier work.
  Expected<VkCommandBuffer> begin_copies();
  // Ends it with the barrier that makes the copies visible to shaders, later
  // copies and the host, submits it after any event waited for, and returns
  // the timeline value it signals.
  Expected<uint64_t> submit_copies();
  // Submits one vkCmdCopyBuffer of `regions` (offsets from each buffer's byte 0).
  Expected<uint64_t> submit_copy(const VulkanBuffer& from, const VulkanBuffer& to, std::span<const VkBufferCopy> regions);
  // A copy whose source and destination overlap in one buffer, bounced
  // through the ring in chunks ordered so no source byte is overwritten first.
  Status copy_overlapping(const VulkanBuffer& from, uint64_t src_offset, const VulkanBuffer& to, uint64_t dst_offset, uint64_t bytes);
  // The point an event recorded now stands for.
  uint64_t position() const { return std::max(last_, wait_for_); }

  struct PooledCommandBuffer {
    std::unique_ptr<CommandBuffer> cb;
    uint64_t value = 0;  // timeline value of its last submission
  };
  std::shared_ptr<DeviceContext> ctx_;
  std::shared_ptr<HostCopies> owed_;
  StagingRing ring_;
  std::vector<PooledCommandBuffer> pool_;
  size_t current_ = 0;     // the pooled buffer begin_copies() handed out
  uint64_t last_ = 0;      // timeline value of this stream's last submission
  uint64_t wait_for_ = 0;  // an event the next submission waits for (0: none)
};

}  // namespace tessera::vulkan
