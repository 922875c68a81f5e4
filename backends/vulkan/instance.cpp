#include "backends/vulkan/instance.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace tessera::vulkan {

namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && *v != '0';
}

// Selection order: lower is preferred.
int kind_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

DeviceKind kind_of(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceKind::gpu_discrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceKind::gpu_integrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceKind::gpu_discrete;
    default: return DeviceKind::cpu_emulated;  // CPU implementations (lavapipe, SwiftShader) and "other"
  }
}

// DeviceInfo::arch: a CPU implementation by its driver (it has no chip to
// name), a GPU as vendor:device id, the pair that identifies its silicon.
std::string arch_of(const VulkanApi& api, VkPhysicalDevice handle, const VkPhysicalDeviceProperties& props) {
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &driver};
  api.vkGetPhysicalDeviceProperties2(handle, &p2);
  if (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) return "lavapipe";
  if (driver.driverID == VK_DRIVER_ID_GOOGLE_SWIFTSHADER) return "swiftshader";
  if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && driver.driverName[0]) return driver.driverName;
  const char* vendor = nullptr;
  switch (props.vendorID) {
    case 0x10de: vendor = "nvidia"; break;
    case 0x1002: vendor = "amd"; break;
    case 0x8086: vendor = "intel"; break;
    case 0x13b5: vendor = "arm"; break;
    case 0x5143: vendor = "qualcomm"; break;
    case 0x106b: vendor = "apple"; break;
    default: break;
  }
  char id[32];
  std::snprintf(id, sizeof id, ":0x%04x", props.deviceID);
  if (vendor) return vendor + std::string(id);
  char v[16];
  std::snprintf(v, sizeof v, "0x%04x", props.vendorID);
  return v + std::string(id);
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

bool has_extension(const VulkanApi& api, VkPhysicalDevice handle, const char* name) {
  uint32_t n = 0;
  api.vkEnumerateDeviceExtensionProperties(handle, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  api.vkEnumerateDeviceExtensionProperties(handle, nullptr, &n, exts.data());
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Core Vulkan does not report compute units; the tiling pass sizes work by
// them. NVIDIA and AMD say through an extension; a CPU implementation
// (lavapipe) runs workgroups on one thread per core. 0: not known.
uint32_t compute_units(const VulkanApi& api, VkPhysicalDevice handle, const VkPhysicalDeviceProperties& props) {
  if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) return std::max(1u, std::thread::hardware_concurrency());
  if (has_extension(api, handle, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sm};
    api.vkGetPhysicalDeviceProperties2(handle, &p2);
    return sm.shaderSMCount;
  }
  if (has_extension(api, handle, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCorePropertiesAMD core{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &core};
    api.vkGetPhysicalDeviceProperties2(handle, &p2);
    return core.shaderEngineCount * core.shaderArraysPerEngineCount * core.computeUnitsPerShaderArray;
  }
  return 0;
}

PhysicalDevice probe(const VulkanApi& api, VkPhysicalDevice handle) {
  PhysicalDevice d;
  d.handle = handle;
  api.vkGetPhysicalDeviceProperties(handle, &d.props);
  api.vkGetPhysicalDeviceMemoryProperties(handle, &d.memory);
  const std::string name = d.props.deviceName;
  if (d.props.apiVersion < VK_API_VERSION_1_2) {
    d.unusable = name + ": Vulkan " + version_string(d.props.apiVersion) + "; the backend needs 1.2 (timeline semaphores)";
    return d;
  }

  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
  api.vkGetPhysicalDeviceProperties2(handle, &props2);
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
  api.vkGetPhysicalDeviceFeatures2(handle, &f2);

  d.subgroup_size = subgroup.subgroupSize;
  const VkSubgroupFeatureFlags needed = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  d.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & needed) == needed;
  d.shader_float16 = f12.shaderFloat16;
  d.shader_int8 = f12.shaderInt8;
  d.storage_16bit = f11.storageBuffer16BitAccess;
  d.storage_8bit = f12.storageBuffer8BitAccess;
  d.timeline_semaphore = f12.timelineSemaphore;
  d.memory_budget = has_extension(api, handle, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

  uint32_t n_families = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(handle, &n_families, nullptr);
  std::vector<VkQueueFamilyProperties> families(n_families);
  api.vkGetPhysicalDeviceQueueFamilyProperties(handle, &n_families, families.data());
  int chosen = -1;
  for (uint32_t i = 0; i < n_families; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if (!(f & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
    // A compute-only family is the GPU's asynchronous compute engine; take it when there is one.
    if (chosen < 0 || !(f & VK_QUEUE_GRAPHICS_BIT)) chosen = (int)i;
    if (!(f & VK_QUEUE_GRAPHICS_BIT)) break;
  }
  if (chosen >= 0) {
    d.queue_family = (uint32_t)chosen;
    d.timestamp_valid_bits = families[(size_t)chosen].timestampValidBits;
  }

  if (chosen < 0) d.unusable = name + ": no queue family supports compute";
  else if (!d.timeline_semaphore) d.unusable = name + ": no timeline semaphores (Vulkan 1.2 feature timelineSemaphore)";

  DeviceInfo& info = d.info;
  info.name = name;
  info.backend = "vulkan";
  info.kind = kind_of(d.props.deviceType);
  info.arch = arch_of(api, handle, d.props);
  for (uint32_t h = 0; h < d.memory.memoryHeapCount; ++h)
    if (d.memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) info.memory_bytes += d.memory.memoryHeaps[h].size;
  info.compute_units = compute_units(api, handle, d.props);
  info.subgroup_size = d.subgroup_size;
  info.simd_width_bits = d.subgroup_size * 32;
  info.shared_memory_per_group_bytes = d.props.limits.maxComputeSharedMemorySize;
  info.max_workgroup_invocations =
      std::min(d.props.limits.maxComputeWorkGroupInvocations, d.props.limits.maxComputeWorkGroupSize[0]);
  info.features.push_back("vulkan " + version_string(d.props.apiVersion));
  if (d.shader_float16) info.features.push_back("f16");
  if (d.shader_int8) info.features.push_back("int8");
  if (d.storage_16bit) info.features.push_back("16bit_storage");
  if (d.storage_8bit) info.features.push_back("8bit_storage");
  if (d.subgroup_arithmetic) info.features.push_back("subgroup_arithmetic");
  if (d.timeline_semaphore) info.features.push_back("timeline_semaphore");
  if (d.timestamp_valid_bits) info.features.push_back("timestamps");
  if (d.memory_budget) info.features.push_back("memory_budget");
  info.kernel_isa = std::string("spirv_") + shader_variant(d);
  return d;
}

}  // namespace

const char* shader_variant(const PhysicalDevice& d) {
  return d.subgroup_arithmetic && !env_on("TESSERA_VULKAN_PORTABLE") ? "subgroup" : "portable";
}

Expected<std::vector<size_t>> parse_device_filter(std::string_view text, size_t usable) {
  const std::string expected = "; expected a comma-separated list of physical-device indices from 0 to " +
                               std::to_string(usable == 0 ? 0 : usable - 1) + " (repeats allowed), e.g. 0,0";
  if (usable == 0)
    return invalid_argument("TESSERA_VULKAN_DEVICES='" + std::string(text) + "': there is no usable Vulkan device to list");
  std::vector<size_t> out;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, end - start);
    size_t index = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || index >= usable)
      return invalid_argument("TESSERA_VULKAN_DEVICES='" + std::string(text) + "': '" + std::string(item) + "'" + expected);
    out.push_back(index);
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

Expected<std::unique_ptr<VulkanInstance>> VulkanInstance::create() {
  std::unique_ptr<VulkanInstance> inst(new VulkanInstance());
  VulkanApi& api = inst->api_;
  TS_TRY(api.load_loader());
  uint32_t version = VK_API_VERSION_1_0;
  if (api.vkEnumerateInstanceVersion) api.vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_2)
    return unsupported("the Vulkan loader is version " + version_string(version) + "; the backend needs 1.2");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "tessera";
  app.pEngineName = "tessera";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  // $TESSERA_VULKAN_VALIDATION=1 turns on the Khronos validation layer when it is installed.
  const char* validation = "VK_LAYER_KHRONOS_validation";
  if (env_on("TESSERA_VULKAN_VALIDATION")) {
    uint32_t n = 0;
    api.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> layers(n);
    api.vkEnumerateInstanceLayerProperties(&n, layers.data());
    for (const auto& l : layers)
      if (std::strcmp(l.layerName, validation) == 0) {
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = &validation;
      }
  }
  const VkResult r = api.vkCreateInstance(&ci, nullptr, &inst->instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return not_found("no Vulkan driver: vkCreateInstance returned VK_ERROR_INCOMPATIBLE_DRIVER (install one, e.g. mesa-vulkan-drivers)");
  TS_VK_TRY(r, "vkCreateInstance");
  TS_TRY(api.load_instance(inst->instance_));

  uint32_t n = 0;
  TS_VK_TRY(api.vkEnumeratePhysicalDevices(inst->instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> handles(n);
  TS_VK_TRY(api.vkEnumeratePhysicalDevices(inst->instance_, &n, handles.data()), "vkEnumeratePhysicalDevices");
  for (VkPhysicalDevice h : handles) {
    PhysicalDevice d = probe(api, h);
    (d.unusable.empty() ? inst->devices_ : inst->unusable_).push_back(std::move(d));
  }
  std::stable_sort(inst->devices_.begin(), inst->devices_.end(), [](const PhysicalDevice& a, const PhysicalDevice& b) {
    return kind_rank(a.props.deviceType) < kind_rank(b.props.deviceType);
  });
  if (const char* filter = std::getenv("TESSERA_VULKAN_DEVICES"); filter && *filter) {
    TS_ASSIGN_OR_RETURN(std::vector<size_t> picks, parse_device_filter(filter, inst->devices_.size()));
    std::vector<PhysicalDevice> listed;
    for (size_t p : picks) listed.push_back(inst->devices_[p]);
    inst->devices_ = std::move(listed);
  }
  for (size_t i = 0; i < inst->devices_.size(); ++i) inst->devices_[i].info.index = (int)i;
  return inst;
}

}  // namespace tessera::vulkan
