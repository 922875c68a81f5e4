#include "backends/vulkan/device.h"

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/executable.h"
#include "backends/vulkan/recording.h"
#include "backends/vulkan/stream.h"

namespace tessera::vulkan {

VulkanDevice::VulkanDevice(std::shared_ptr<DeviceContext> ctx, std::unique_ptr<Transfer> transfer)
    : ctx_(std::move(ctx)), transfer_(std::move(transfer)), table_(shader_variant(ctx_->physical())) {}

Expected<std::unique_ptr<Buffer>> VulkanDevice::allocate(uint64_t bytes, MemoryUse use) {
  const MemoryKind kind = use == MemoryUse::host_staging ? MemoryKind::staging : MemoryKind::device_local;
  TS_ASSIGN_OR_RETURN(auto b, VulkanBuffer::create(ctx_, bytes, use, kind));
  return std::unique_ptr<Buffer>(std::move(b));
}

Expected<std::unique_ptr<Buffer>> VulkanDevice::import_weights(std::span<const std::byte> bytes) {
  TS_ASSIGN_OR_RETURN(auto b, VulkanBuffer::create(ctx_, bytes.size(), MemoryUse::weights, MemoryKind::device_local));
  TS_TRY(transfer_->write(*b, 0, bytes, 0));
  return std::unique_ptr<Buffer>(std::move(b));
}

Expected<std::unique_ptr<Stream>> VulkanDevice::create_stream() {
  TS_ASSIGN_OR_RETURN(auto s, VulkanStream::create(ctx_));
  return std::unique_ptr<Stream>(std::move(s));
}

Expected<std::unique_ptr<Event>> VulkanDevice::create_event() { return std::unique_ptr<Event>(new VulkanEvent(ctx_)); }

Expected<std::unique_ptr<Executable>> VulkanDevice::compile(const Plan& plan, std::span<Buffer* const> bound) {
  TS_ASSIGN_OR_RETURN(auto exe, VulkanExecutable::create(ctx_, *transfer_, plan, bound));
  return std::unique_ptr<Executable>(std::move(exe));
}

Expected<uint64_t> VulkanDevice::free_memory() const {
  const PhysicalDevice& p = ctx_->physical();
  const VulkanApi& vk = ctx_->vk();
  if (p.memory_budget && vk.vkGetPhysicalDeviceMemoryProperties2) {
    // The driver's figure: budget (what this process may use of the heap,
    // others' use taken out) less what this process uses, over device-local heaps.
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, &budget};
    vk.vkGetPhysicalDeviceMemoryProperties2(p.handle, &props);
    uint64_t free = 0;
    for (uint32_t h = 0; h < props.memoryProperties.memoryHeapCount; ++h)
      if ((props.memoryProperties.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && budget.heapBudget[h] > budget.heapUsage[h])
        free += budget.heapBudget[h] - budget.heapUsage[h];
    return free;
  }
  // Without the extension only our own use is known: the device-local heaps
  // less what this VkDevice's allocator holds (other processes and other
  // listed devices on the same chip are not seen).
  const uint64_t used = ctx_->allocator().bytes_in_use();
  return info().memory_bytes > used ? info().memory_bytes - used : 0;
}

Status VulkanBackend::ensure_instance() const {
  if (tried_) return instance_status_;
  tried_ = true;
  auto inst = VulkanInstance::create();
  if (!inst) {
    instance_status_ = inst.status();
    return instance_status_;
  }
  instance_ = inst->release();
  contexts_ = new std::vector<std::shared_ptr<DeviceContext>>(instance_->devices().size());
  return Status::ok();
}

std::vector<DeviceInfo> VulkanBackend::enumerate() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<DeviceInfo> out;
  if (!ensure_instance().is_ok()) return out;
  for (const auto& d : instance_->devices()) out.push_back(d.info);
  return out;
}

std::string VulkanBackend::why_none() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Status s = ensure_instance();
  if (!s.is_ok()) return s.message();
  if (!instance_->devices().empty()) return {};
  if (instance_->unusable().empty()) return "the Vulkan loader found no physical device";
  std::string why;
  for (const auto& d : instance_->unusable()) why += (why.empty() ? "" : "; ") + d.unusable;
  return why;
}

Expected<std::unique_ptr<Device>> VulkanBackend::open(int index) {
  std::lock_guard<std::mutex> lock(mutex_);
  TS_TRY(ensure_instance());
  const auto& devices = instance_->devices();
  if (index < 0 || (size_t)index >= devices.size())
    return not_found("vulkan backend: device " + std::to_string(index) + " does not exist (" + std::to_string(devices.size()) +
                     " usable device" + (devices.size() == 1 ? "" : "s") +
                     "; TESSERA_VULKAN_DEVICES lists physical devices again under further indices, e.g. 0,0)");
  auto& ctx = (*contexts_)[(size_t)index];
  if (!ctx) {
    TS_ASSIGN_OR_RETURN(ctx, DeviceContext::create(*instance_, devices[(size_t)index]));
  }
  TS_ASSIGN_OR_RETURN(auto transfer, Transfer::create(ctx));
  return std::unique_ptr<Device>(new VulkanDevice(ctx, std::move(transfer)));
}

}  // namespace tessera::vulkan
