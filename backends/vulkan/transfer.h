#pragma once
// The device's own synchronous host-to-device writes: weights at load and
// tables an executable builds at compile time, which must be in place when
// the call returns (streams copy asynchronously, stream.h); and the few
// reads compile makes of a weight. Where the buffer's
// memory is host-visible (lavapipe, integrated GPUs) the host copies directly;
// else the bytes go through a host-visible staging buffer and a queue copy,
// in chunks. $TESSERA_VULKAN_STAGING=1 forces the staging path everywhere (as
// on a discrete GPU), so it is tested on any device.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/context.h"

namespace tessera::vulkan {

bool force_staging();

class Transfer {
 public:
  static Expected<std::unique_ptr<Transfer>> create(std::shared_ptr<DeviceContext> ctx);

  // Returns when the bytes are in `dst`; `after` is the timeline value of the
  // earliest work the write must follow (it may read or write the range).
  Status write(VulkanBuffer& dst, uint64_t offset, std::span<const std::byte> src, uint64_t after);
  // Returns when `dst` holds the bytes of `src` from `offset`, after all
  // earlier submissions: for compile-time reads of weights (a RoPE table's
  // frequency factors), not for a step's results (streams read those).
  Status read(const VulkanBuffer& src, uint64_t offset, std::span<std::byte> dst);

 private:
  explicit Transfer(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  Status ensure_staging();
  // One queue copy, ordered after all earlier submissions; waits for it.
  Status copy(const VulkanBuffer& from, uint64_t from_off, const VulkanBuffer& to, uint64_t to_off, uint64_t bytes);

  std::shared_ptr<DeviceContext> ctx_;
  std::mutex mutex_;
  std::unique_ptr<CommandBuffer> cb_;
  std::unique_ptr<VulkanBuffer> staging_;
};

}  // namespace tessera::vulkan
