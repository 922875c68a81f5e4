#pragma once
// One logical VkDevice per physical device, shared by every tessera Device
// opened on it in this process: the compute queue, the timeline semaphore
// that orders submissions, the memory allocator and the pipeline cache (so
// each pipeline is created once per process; lavapipe compiles each with
// LLVM at creation).
#include <memory>
#include <mutex>

#include "backends/vulkan/instance.h"

namespace tessera::vulkan {

class MemoryAllocator;
class PipelineCache;

class DeviceContext {
 public:
  static Expected<std::shared_ptr<DeviceContext>> create(const VulkanInstance& instance, const PhysicalDevice& physical);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  const VulkanApi& vk() const { return api_; }
  VkDevice device() const { return device_; }
  const PhysicalDevice& physical() const { return physical_; }
  const VkPhysicalDeviceLimits& limits() const { return physical_.props.limits; }
  MemoryAllocator& allocator() { return *allocator_; }
  PipelineCache& pipelines() { return *pipelines_; }

  // Submits `cb` to the queue; returns the timeline value it signals when done.
  // With `wait_value`, the queue holds the submission until the timeline has
  // reached it (another stream's event): a wait on the device, not the host.
  Expected<uint64_t> submit(VkCommandBuffer cb, uint64_t wait_value = 0);
  // Blocks until every submission up to `value` has finished.
  Status wait(uint64_t value);
  uint64_t last_submitted() const;
  // The timeline's value now: every submission up to it has finished.
  uint64_t completed() const;

 private:
  DeviceContext(const VulkanApi& api, const PhysicalDevice& p);

  VulkanApi api_;
  PhysicalDevice physical_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  mutable std::mutex queue_mutex_;  // vkQueueSubmit needs external synchronization
  uint64_t submitted_ = 0;  // last value a submission signals, under queue_mutex_
  std::unique_ptr<MemoryAllocator> allocator_;
  std::unique_ptr<PipelineCache> pipelines_;
};

// A command pool with one primary command buffer, owned by whoever records
// it (an executable, a transfer helper): pools need external synchronization,
// so none is shared between owners.
class CommandBuffer {
 public:
  static Expected<std::unique_ptr<CommandBuffer>> create(DeviceContext& ctx);
  ~CommandBuffer();
  VkCommandBuffer handle() const { return cb_; }

 private:
  explicit CommandBuffer(DeviceContext& ctx) : ctx_(ctx) {}
  DeviceContext& ctx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
};

// One global memory barrier from (src_stage, src) to (dst_stage, dst).
void memory_barrier(const VulkanApi& vk, VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst);

// Resets `cb` and begins it for one submission of copies that follow
// everything earlier on the queue (shaders, copies, host writes): what every
// copy submission starts with.
Status begin_copy_commands(const VulkanApi& vk, VkCommandBuffer cb);

}  // namespace tessera::vulkan
