#pragma once
// The recorded command buffer of one executable and what it references:
// pipelines (from the process-wide cache), one descriptor set per dispatch,
// and pipeline barriers only where a dispatch reads or overwrites what an
// earlier one since the last barrier wrote or read. With TESSERA_PROFILE=1
// every dispatch is timed with timestamps (and barriers separate all of
// them), and the per-op times are printed when the executable goes.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/encode.h"

namespace tessera::vulkan {

// The step's one host-to-device copy, when the step block is not mapped.
struct StepCopy {
  const VulkanBuffer* staging = nullptr;
  const VulkanBuffer* block = nullptr;
  uint64_t bytes = 0;
};

class Recording {
 public:
  static Expected<std::unique_ptr<Recording>> create(std::shared_ptr<DeviceContext> ctx, const std::vector<EncodedDispatch>& dispatches,
                                                     const VulkanBuffer& step_params, const StepCopy& copy, int32_t bucket_tokens);
  ~Recording();
  VkCommandBuffer handle() const { return cb_->handle(); }
  // After a step finished: adds its timestamps to the profile (when profiling).
  void collect_profile();
  size_t barriers() const { return barriers_; }

 private:
  explicit Recording(std::shared_ptr<DeviceContext> ctx) : ctx_(std::move(ctx)) {}
  Status record(const std::vector<EncodedDispatch>& dispatches, const VulkanBuffer& step_params, const StepCopy& copy);
  Expected<VkDescriptorBufferInfo> descriptor_for(const TensorBinding& b, uint32_t* remainder) const;

  std::shared_ptr<DeviceContext> ctx_;
  std::unique_ptr<CommandBuffer> cb_;
  std::unique_ptr<VulkanBuffer> dummy_;  // bound where a shader declares a binding the dispatch does not use
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets_;
  size_t barriers_ = 0;
  // Profiling.
  VkQueryPool queries_ = VK_NULL_HANDLE;
  std::vector<OpKind> ops_;  // per timed dispatch
  std::array<double, kOpKindCount> op_ns_{};
  std::array<uint64_t, kOpKindCount> op_calls_{};
  uint64_t steps_ = 0;
  int32_t bucket_tokens_ = 0;
};

// TESSERA_PROFILE is set (and not "0").
bool profiling_enabled();

}  // namespace tessera::vulkan
