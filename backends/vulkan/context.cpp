#include "backends/vulkan/context.h"

#include <string>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/pipelines.h"

namespace tessera::vulkan {

namespace {

// A step on a slow device (lavapipe prefilling a large model) can take
// minutes; past this something is wrong and waiting longer would hang the caller.
constexpr uint64_t kWaitTimeoutNs = 1800ull * 1000 * 1000 * 1000;

}  // namespace

DeviceContext::DeviceContext(const VulkanApi& api, const PhysicalDevice& p) : api_(api), physical_(p) {}

Expected<std::shared_ptr<DeviceContext>> DeviceContext::create(const VulkanInstance& instance, const PhysicalDevice& p) {
  std::shared_ptr<DeviceContext> ctx(new DeviceContext(instance.api(), p));
  const VulkanApi& vk = ctx->api_;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = p.queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  // Only what the shaders and host code use: every shader runs on 32-bit
  // storage, so 16-bit storage and f16/int8 arithmetic stay off.
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.timelineSemaphore = VK_TRUE;
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f12};
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &queue;
  TS_VK_TRY(vk.vkCreateDevice(p.handle, &ci, nullptr, &ctx->device_), "vkCreateDevice");
  TS_TRY(ctx->api_.load_device(ctx->device_));
  vk.vkGetDeviceQueue(ctx->device_, p.queue_family, 0, &ctx->queue_);

  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type};
  TS_VK_TRY(vk.vkCreateSemaphore(ctx->device_, &sci, nullptr, &ctx->timeline_), "vkCreateSemaphore (timeline)");

  ctx->allocator_ = std::make_unique<MemoryAllocator>(*ctx);
  TS_ASSIGN_OR_RETURN(ctx->pipelines_, PipelineCache::create(*ctx));
  return ctx;
}

DeviceContext::~DeviceContext() {
  if (!device_) return;
  api_.vkDeviceWaitIdle(device_);
  pipelines_.reset();
  allocator_.reset();
  if (timeline_) api_.vkDestroySemaphore(device_, timeline_, nullptr);
  api_.vkDestroyDevice(device_, nullptr);
}

Expected<uint64_t> DeviceContext::submit(VkCommandBuffer cb, uint64_t wait_value) {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  const uint64_t value = submitted_ + 1;
  // A value at or past `value` would never be signalled before this batch runs.
  if (wait_value >= value)
    return internal_error("vulkan: a submission waits for timeline value " + std::to_string(wait_value) +
                          ", which no earlier submission signals");
  VkTimelineSemaphoreSubmitInfo timeline{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  timeline.signalSemaphoreValueCount = 1;
  timeline.pSignalSemaphoreValues = &value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO, &timeline};
  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  if (wait_value > 0) {
    timeline.waitSemaphoreValueCount = 1;
    timeline.pWaitSemaphoreValues = &wait_value;
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &timeline_;
    si.pWaitDstStageMask = &wait_stage;
  }
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &timeline_;
  TS_VK_TRY(api_.vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
  submitted_ = value;
  return value;
}

Status DeviceContext::wait(uint64_t value) {
  if (value == 0) return Status::ok();
  VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wi.semaphoreCount = 1;
  wi.pSemaphores = &timeline_;
  wi.pValues = &value;
  const VkResult r = api_.vkWaitSemaphores(device_, &wi, kWaitTimeoutNs);
  if (r == VK_TIMEOUT) return internal_error("vulkan: submitted work did not finish within 30 minutes (device hung?)");
  TS_VK_TRY(r, "vkWaitSemaphores");
  return Status::ok();
}

uint64_t DeviceContext::last_submitted() const {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  return submitted_;
}

uint64_t DeviceContext::completed() const {
  uint64_t value = 0;
  if (api_.vkGetSemaphoreCounterValue(device_, timeline_, &value) != VK_SUCCESS) return 0;
  return value;
}

void memory_barrier(const VulkanApi& vk, VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src;
  b.dstAccessMask = dst;
  vk.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}

Status begin_copy_commands(const VulkanApi& vk, VkCommandBuffer cb) {
  TS_VK_TRY(vk.vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  TS_VK_TRY(vk.vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  memory_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  return Status::ok();
}

Expected<std::unique_ptr<CommandBuffer>> CommandBuffer::create(DeviceContext& ctx) {
  std::unique_ptr<CommandBuffer> c(new CommandBuffer(ctx));
  const VulkanApi& vk = ctx.vk();
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = ctx.physical().queue_family;
  TS_VK_TRY(vk.vkCreateCommandPool(ctx.device(), &pci, nullptr, &c->pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = c->pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  TS_VK_TRY(vk.vkAllocateCommandBuffers(ctx.device(), &ai, &c->cb_), "vkAllocateCommandBuffers");
  return c;
}

CommandBuffer::~CommandBuffer() {
  // Destroying the pool frees its command buffer.
  if (pool_) ctx_.vk().vkDestroyCommandPool(ctx_.device(), pool_, nullptr);
}

}  // namespace tessera::vulkan
