#pragma once
// The one VkInstance of the process and the physical devices it sees, ordered
// discrete GPU first, then integrated, virtual, and CPU implementations such
// as Mesa's lavapipe last; `--device N` and vulkan:N index this order, or
// the list $TESSERA_VULKAN_DEVICES makes of it ("0,0": physical device 0
// twice, as vulkan:0 and vulkan:1, each opened as its own VkDevice).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/vulkan/vk_api.h"
#include "core/hal/device_info.h"

namespace tessera::vulkan {

// What the backend needs to know about one physical device.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t queue_family = 0;         // compute-capable; a compute-only family when there is one
  uint32_t timestamp_valid_bits = 0; // of that family; 0 when it cannot time dispatches
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // compute stage has basic + arithmetic subgroup operations
  bool shader_float16 = false, shader_int8 = false;
  bool storage_16bit = false, storage_8bit = false;
  bool timeline_semaphore = false;
  bool memory_budget = false;        // VK_EXT_memory_budget: free memory per heap (VulkanDevice::free_memory)
  // Empty when the backend can run on the device, else why not.
  std::string unusable;
  DeviceInfo info;
};

class VulkanInstance {
 public:
  // Loads libvulkan.so.1 and creates the instance; the error says in one
  // line what is missing (loader, driver).
  static Expected<std::unique_ptr<VulkanInstance>> create();
  ~VulkanInstance() = default;  // never destroyed: see VulkanBackend

  const VulkanApi& api() const { return api_; }
  VkInstance handle() const { return instance_; }
  // Usable devices, in selection order (after $TESSERA_VULKAN_DEVICES);
  // devices()[i].info.index == i.
  const std::vector<PhysicalDevice>& devices() const { return devices_; }
  // Devices present that the backend cannot run on, with the reason each.
  const std::vector<PhysicalDevice>& unusable() const { return unusable_; }

 private:
  VulkanApi api_;
  VkInstance instance_ = VK_NULL_HANDLE;
  std::vector<PhysicalDevice> devices_, unusable_;
};

// Which shader variant a device runs: "subgroup" or "portable"
// ($TESSERA_VULKAN_PORTABLE=1 forces portable everywhere).
const char* shader_variant(const PhysicalDevice& d);

// $TESSERA_VULKAN_DEVICES: "i,j,..." indices into the `usable` devices in
// selection order, repeats allowed; an error names the variable and the text.
Expected<std::vector<size_t>> parse_device_filter(std::string_view text, size_t usable);

}  // namespace tessera::vulkan
