#include "backends/vulkan/vk_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace tessera::vulkan {

Status VulkanApi::load_loader() {
  const char* env = std::getenv("TESSERA_VULKAN_LOADER");
  const char* path = env && *env ? env : "libvulkan.so.1";
  // Kept open for the life of the process: Vulkan objects outlive any scope here.
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return not_found(std::string(path) + " not found (install the Vulkan loader, e.g. libvulkan1)");
  vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr) return not_found(std::string(path) + " has no vkGetInstanceProcAddr");
#define TS_VK_LOAD_GLOBAL(name) name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(nullptr, #name));
  TS_VK_GLOBAL_FUNCTIONS(TS_VK_LOAD_GLOBAL)
#undef TS_VK_LOAD_GLOBAL
  if (!vkCreateInstance) return not_found(std::string(path) + ": vkCreateInstance not found");
  return Status::ok();
}

Status VulkanApi::load_instance(VkInstance instance) {
#define TS_VK_LOAD_INSTANCE(name)                                                          \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));            \
  if (!name) return unsupported("vulkan: the loader has no " #name " (Vulkan 1.1 or later is needed)");
  TS_VK_INSTANCE_FUNCTIONS(TS_VK_LOAD_INSTANCE)
#undef TS_VK_LOAD_INSTANCE
  return Status::ok();
}

Status VulkanApi::load_device(VkDevice device) {
#define TS_VK_LOAD_DEVICE(name)                                                 \
  name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));      \
  if (!name) return unsupported("vulkan: the device has no " #name " (Vulkan 1.2 is needed)");
  TS_VK_DEVICE_FUNCTIONS(TS_VK_LOAD_DEVICE)
#undef TS_VK_LOAD_DEVICE
  return Status::ok();
}

const char* to_string(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "VK_ERROR_UNKNOWN";
  }
}

}  // namespace tessera::vulkan
