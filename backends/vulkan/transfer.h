#pragma once
// Host <-> device copies. Where the buffer's memory is host-visible (lavapipe,
// integrated GPUs) the host copies directly once earlier work is done; else
// the bytes go through a host-visible staging buffer and a queue copy, in
// chunks. $TESSERA_VULKAN_STAGING=1 forces the staging path everywhere (as on
// a discrete GPU), so it is tested on any device.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/context.h"

namespace tessera::vulkan {

bool force_staging();

class Transfer {
 public:
  static Expected<std::unique_ptr<Transfer>> create(std::shared_ptr<DeviceContext> ctx);

  // Both return when the copy is complete; `after` is the timeline value of
  // the earliest work the copy must follow (it may read or write the range).
  Status write(VulkanBuffer& dst, uint64_t offset, std::span<const std::byte> src, uint64_t after);
  Status read(std::span<std::byte> dst, const VulkanBuffer& src, uint64_t offset, uint64_t after);
  // Device-side copies between buffers of this device, as one queue submission
  // ordered after `after`; returns when they are done.
  struct Regions {
    const VulkanBuffer* from = nullptr;
    const VulkanBuffer* to = nullptr;
    std::vector<VkBufferCopy> regions;  // offsets relative to each buffer's byte 0
  };
  Status copy_regions(std::span<const Regions> batches, uint64_t after);

 private:
  explicit Transfer(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  Status ensure_staging();
  Status copy(const VulkanBuffer& from, uint64_t from_off, const VulkanBuffer& to, uint64_t to_off, uint64_t bytes);
  Status submit_copies(std::span<const Regions> batches);

  std::shared_ptr<DeviceContext> ctx_;
  std::mutex mutex_;
  std::unique_ptr<CommandBuffer> cb_;
  std::unique_ptr<VulkanBuffer> staging_;
};

}  // namespace tessera::vulkan
