#pragma once
// Device memory: a sub-allocator over a few large VkDeviceMemory blocks per
// memory type (drivers limit the number of allocations, and each is slow),
// and the HAL Buffer on top of it. Device-local memory holds weights,
// activations, KV pools and step inputs; host-visible memory is staging for
// uploads and read-backs. Host-visible blocks stay mapped.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/vulkan/vk_api.h"
#include "core/hal/buffer.h"

namespace tessera::vulkan {

class DeviceContext;

enum class MemoryKind : uint8_t {
  device_local,  // what the shaders read and write
  staging,       // host-visible, coherent: the host writes, the device copies out or in
};

struct Allocation {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t offset = 0, size = 0;
  std::byte* mapped = nullptr;  // host address of `offset` when the memory is host-visible
  uint32_t type = 0;
  int32_t block = -1;  // index in the type's block list; -1 for a dedicated allocation
};

class MemoryAllocator {
 public:
  explicit MemoryAllocator(DeviceContext& ctx);
  ~MemoryAllocator();

  Expected<Allocation> allocate(const VkMemoryRequirements& req, MemoryKind kind, const char* what);
  void release(const Allocation& a);
  uint64_t bytes_in_use() const;

 private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t size = 0;
    std::byte* mapped = nullptr;
    std::map<uint64_t, uint64_t> free;  // offset -> size, coalesced
  };
  Expected<uint32_t> choose_type(uint32_t allowed, MemoryKind kind) const;
  Expected<Block> new_block(uint32_t type, uint64_t size, const char* what);

  DeviceContext& ctx_;
  mutable std::mutex mutex_;
  uint64_t block_bytes_ = 0;
  std::map<uint32_t, std::vector<Block>> blocks_;  // by memory type
  uint64_t in_use_ = 0;
};

// A HAL buffer: a VkBuffer over its own allocation, or a view of a range of
// another buffer (the step inputs share one buffer so that a step uploads
// them in one copy).
class VulkanBuffer final : public Buffer {
 public:
  static Expected<std::unique_ptr<VulkanBuffer>> create(std::shared_ptr<DeviceContext> ctx, uint64_t bytes, MemoryUse use,
                                                        MemoryKind kind);
  static std::unique_ptr<VulkanBuffer> view(const VulkanBuffer& parent, uint64_t offset, uint64_t bytes, MemoryUse use);
  ~VulkanBuffer() override;

  uint64_t size() const override { return size_; }
  MemoryUse use() const override { return use_; }
  // Only host_staging buffers (pinned memory the host reads and writes by
  // design); code above backends/ moves data into the others only through a
  // Stream, even when (as on lavapipe or an integrated GPU) they happen to be mapped.
  std::byte* host_data() override { return use_ == MemoryUse::host_staging ? mapped_ : nullptr; }

  VkBuffer handle() const { return handle_; }
  uint64_t base() const { return base_; }            // offset of this buffer's byte 0 in handle()
  uint64_t bound_bytes() const { return bound_; }    // bytes of handle() from base() a shader may address
  std::byte* mapped() const { return mapped_; }      // host address of byte 0, when host-visible
  const DeviceContext* context() const { return ctx_.get(); }

 private:
  VulkanBuffer() = default;
  std::shared_ptr<DeviceContext> ctx_;
  VkBuffer handle_ = VK_NULL_HANDLE;
  bool owns_ = false;
  Allocation alloc_;
  uint64_t base_ = 0, size_ = 0, bound_ = 0;
  std::byte* mapped_ = nullptr;
  MemoryUse use_ = MemoryUse::activations;
};

}  // namespace tessera::vulkan
