#pragma once
// A Vulkan stream: run() submits an executable's recorded command buffer and
// returns; synchronize() waits on the timeline semaphore value of the stream's
// last submission; upload and download wait for the stream's earlier work and
// complete before they return.
#include <memory>

#include "backends/vulkan/context.h"
#include "backends/vulkan/transfer.h"
#include "core/hal/stream.h"

namespace tessera::vulkan {

// A value of the device's timeline semaphore: complete when the queue has
// finished every submission up to it.
class VulkanEvent final : public Event {
 public:
  explicit VulkanEvent(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  bool query() override;
  Status synchronize() override { return ctx_->wait(value_); }
  const DeviceContext* context() const { return ctx_.get(); }
  uint64_t value() const { return value_; }
  void set(uint64_t value) { value_ = value; }

 private:
  std::shared_ptr<DeviceContext> ctx_;
  uint64_t value_ = 0;
};

class VulkanStream final : public Stream {
 public:
  static Expected<std::unique_ptr<VulkanStream>> create(std::shared_ptr<DeviceContext> ctx);
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
  explicit VulkanStream(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  std::shared_ptr<DeviceContext> ctx_;
  std::unique_ptr<Transfer> transfer_;
  uint64_t last_ = 0;  // timeline value of this stream's last submission
};

}  // namespace tessera::vulkan
