#pragma once
// The Vulkan entry points the backend uses, resolved from libvulkan.so.1 at
// run time (dlopen), so that the plugin loads on machines without a Vulkan
// loader and the backend can say so instead of failing to load.
#include <vulkan/vulkan.h>

#include <string>

#include "core/status.h"

namespace tessera::vulkan {

#define TS_VK_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance)             \
  X(vkEnumerateInstanceVersion)   \
  X(vkEnumerateInstanceLayerProperties)

#define TS_VK_INSTANCE_FUNCTIONS(X)             \
  X(vkDestroyInstance)                          \
  X(vkEnumeratePhysicalDevices)                 \
  X(vkGetPhysicalDeviceProperties)              \
  X(vkGetPhysicalDeviceProperties2)             \
  X(vkGetPhysicalDeviceFeatures2)               \
  X(vkGetPhysicalDeviceMemoryProperties)        \
  X(vkGetPhysicalDeviceMemoryProperties2)       \
  X(vkGetPhysicalDeviceQueueFamilyProperties)   \
  X(vkEnumerateDeviceExtensionProperties)       \
  X(vkCreateDevice)                             \
  X(vkGetDeviceProcAddr)

#define TS_VK_DEVICE_FUNCTIONS(X)     \
  X(vkDestroyDevice)                  \
  X(vkGetDeviceQueue)                 \
  X(vkQueueSubmit)                    \
  X(vkDeviceWaitIdle)                 \
  X(vkAllocateMemory)                 \
  X(vkFreeMemory)                     \
  X(vkMapMemory)                      \
  X(vkUnmapMemory)                    \
  X(vkCreateBuffer)                   \
  X(vkDestroyBuffer)                  \
  X(vkGetBufferMemoryRequirements)    \
  X(vkBindBufferMemory)               \
  X(vkCreateShaderModule)             \
  X(vkDestroyShaderModule)            \
  X(vkCreateComputePipelines)         \
  X(vkDestroyPipeline)                \
  X(vkCreatePipelineLayout)           \
  X(vkDestroyPipelineLayout)          \
  X(vkCreateDescriptorSetLayout)      \
  X(vkDestroyDescriptorSetLayout)     \
  X(vkCreateDescriptorPool)           \
  X(vkDestroyDescriptorPool)          \
  X(vkAllocateDescriptorSets)         \
  X(vkUpdateDescriptorSets)           \
  X(vkCreateCommandPool)              \
  X(vkDestroyCommandPool)             \
  X(vkAllocateCommandBuffers)         \
  X(vkFreeCommandBuffers)             \
  X(vkBeginCommandBuffer)             \
  X(vkEndCommandBuffer)               \
  X(vkResetCommandBuffer)             \
  X(vkCmdBindPipeline)                \
  X(vkCmdBindDescriptorSets)          \
  X(vkCmdPushConstants)               \
  X(vkCmdDispatch)                    \
  X(vkCmdPipelineBarrier)             \
  X(vkCmdCopyBuffer)                  \
  X(vkCmdWriteTimestamp)              \
  X(vkCmdResetQueryPool)              \
  X(vkCreateQueryPool)                \
  X(vkDestroyQueryPool)               \
  X(vkGetQueryPoolResults)            \
  X(vkCreateSemaphore)                \
  X(vkDestroySemaphore)               \
  X(vkWaitSemaphores) \
  X(vkGetSemaphoreCounterValue)

// One table per process: global functions from the loader, instance and
// device functions resolved for the one instance and (per device) through
// vkGetDeviceProcAddr, which skips the loader's dispatch trampoline.
struct VulkanApi {
#define TS_VK_DECLARE(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  TS_VK_GLOBAL_FUNCTIONS(TS_VK_DECLARE)
  TS_VK_INSTANCE_FUNCTIONS(TS_VK_DECLARE)
  TS_VK_DEVICE_FUNCTIONS(TS_VK_DECLARE)
#undef TS_VK_DECLARE

  // dlopen()s the loader ($TESSERA_VULKAN_LOADER, else libvulkan.so.1).
  Status load_loader();
  Status load_instance(VkInstance instance);
  // Device functions for `device` into this table (one table per VkDevice).
  Status load_device(VkDevice device);
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.
const char* to_string(VkResult r);

// A Status for a failed call: "vulkan: vkCreateDevice failed: VK_ERROR_...".
inline Status vk_failed(const char* what, VkResult r) {
  const StatusCode code = (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) ? StatusCode::resource_exhausted
                                                                                                 : StatusCode::internal;
  return {code, std::string("vulkan: ") + what + " failed: " + to_string(r)};
}

}  // namespace tessera::vulkan

// `TS_VK_TRY(api.vkCreateFoo(...), "vkCreateFoo")` returns a Status unless VK_SUCCESS.
#define TS_VK_TRY(call, what)                                          \
  do {                                                                 \
    const VkResult ts_vk_result_ = (call);                             \
    if (ts_vk_result_ != VK_SUCCESS) return ::tessera::vulkan::vk_failed(what, ts_vk_result_); \
  } while (0)
