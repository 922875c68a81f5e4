#pragma once
// The recorded command buffers of one executable and what they reference:
// pipelines (from the process-wide cache), one descriptor set per dispatch,
// and pipeline barriers only where a dispatch reads or overwrites what an
// earlier one since the last barrier wrote or read. One command buffer per
// step slot (executable.h): identical but for where the step's first copy
// takes the step block from, so they share the descriptor sets (written once,
// never updated while a buffer is pending). With TESSERA_PROFILE=1 every
// dispatch is timed with timestamps (and barriers separate all of them), in a
// query pool per slot, and the per-op times are printed when the executable goes.
#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/encode.h"

namespace tessera::vulkan {

// The step's one host-to-device copy: a slot's staging into the step block.
struct StepCopy {
  const VulkanBuffer* staging = nullptr;
  const VulkanBuffer* block = nullptr;
  uint64_t bytes = 0;
};

class Recording {
 public:
  static Expected<std::unique_ptr<Recording>> create(std::shared_ptr<DeviceContext> ctx, const std::vector<EncodedDispatch>& dispatches,
                                                     const VulkanBuffer& step_params, std::span<const StepCopy> slots,
                                                     int32_t bucket_tokens);
  ~Recording();
  VkCommandBuffer handle(uint32_t slot) const { return slots_[slot].cb->handle(); }
  // After a slot's step finished: adds its timestamps to the profile (when profiling).
  void collect_profile(uint32_t slot);
  size_t barriers() const { return barriers_; }

 private:
  explicit Recording(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  // Records slot `slot`'s buffer; the first also writes the descriptor sets.
  Status record(uint32_t slot, const std::vector<EncodedDispatch>& dispatches, const VulkanBuffer& step_params, const StepCopy& copy);
  Expected<VkDescriptorBufferInfo> descriptor_for(const TensorBinding& b, uint32_t* remainder) const;

  struct Slot {
    std::unique_ptr<CommandBuffer> cb;
    VkQueryPool queries = VK_NULL_HANDLE;
  };
  std::shared_ptr<DeviceContext> ctx_;
  std::vector<Slot> slots_;
  std::unique_ptr<VulkanBuffer> dummy_;  // bound where a shader declares a binding the dispatch does not use
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets_;
  size_t barriers_ = 0;
  // Profiling.
  bool timed_ = false;
  std::vector<OpKind> ops_;  // per timed dispatch
  std::array<double, kOpKindCount> op_ns_{};
  std::array<uint64_t, kOpKindCount> op_calls_{};
  uint64_t steps_ = 0;
  int32_t bucket_tokens_ = 0;
};

// TESSERA_PROFILE is set (and not "0").
bool profiling_enabled();

}  // namespace tessera::vulkan
