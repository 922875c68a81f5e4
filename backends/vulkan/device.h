#pragma once
// The Vulkan backend and its devices. Every Device opened on one listed
// device (vulkan:N) shares that device's DeviceContext (queue, memory,
// pipelines); a physical device $TESSERA_VULKAN_DEVICES lists twice is two
// listed devices, each with its own context.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/context.h"
#include "backends/vulkan/kernel_table.h"
#include "backends/vulkan/transfer.h"
#include "core/hal/backend.h"

namespace tessera::vulkan {

class VulkanDevice final : public Device {
 public:
  VulkanDevice(std::shared_ptr<DeviceContext> ctx, std::unique_ptr<Transfer> transfer);
  const DeviceInfo& info() const override { return ctx_->physical().info; }
  const KernelTable& kernels() const override { return table_; }
  Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes, MemoryUse use) override;
  Expected<std::unique_ptr<Buffer>> import_weights(std::span<const std::byte> bytes) override;
  Expected<std::unique_ptr<Stream>> create_stream() override;
  Expected<std::unique_ptr<Event>> create_event() override;
  Expected<std::unique_ptr<Executable>> compile(const Plan& plan, std::span<Buffer* const> bound) override;
  // VK_EXT_memory_budget where the device has it, else the device-local heaps less what this VkDevice holds.
  Expected<uint64_t> free_memory() const override;

 private:
  std::shared_ptr<DeviceContext> ctx_;
  std::unique_ptr<Transfer> transfer_;  // weights and compile-time tables
  VulkanKernelTable table_;
};

class VulkanBackend final : public Backend {
 public:
  std::string name() const override { return "vulkan"; }
  std::vector<DeviceInfo> enumerate() override;
  std::string why_none() const override;
  Expected<std::unique_ptr<Device>> open(int index) override;

 private:
  // The instance and contexts live for the process: they are never
  // destroyed, because the registry that owns this backend is destroyed
  // after the Vulkan driver's own static state (lavapipe's LLVM) at exit.
  // Creates the instance on first use; the answer (or the failure) is kept.
  Status ensure_instance() const;
  mutable std::mutex mutex_;
  mutable bool tried_ = false;
  mutable Status instance_status_;
  mutable VulkanInstance* instance_ = nullptr;
  mutable std::vector<std::shared_ptr<DeviceContext>>* contexts_ = nullptr;
};

}  // namespace tessera::vulkan
