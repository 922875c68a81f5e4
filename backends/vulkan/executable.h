#pragma once
// A Plan compiled for one Vulkan device: its arena and step inputs allocated,
// every dispatch encoded, pipelines and descriptor sets made, and ONE command
// buffer recorded. A step writes the step parameters and arrays into one
// small buffer (mapped, or staged and copied by the first command of the
// recorded buffer) and submits the same command buffer again.
#include <memory>
#include <vector>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/encode.h"
#include "backends/vulkan/transfer.h"
#include "core/hal/step_check.h"
#include "core/hal/stream.h"

namespace tessera::vulkan {

class Recording;

class VulkanExecutable final : public Executable {
 public:
  static Expected<std::unique_ptr<VulkanExecutable>> create(std::shared_ptr<DeviceContext> ctx, Transfer& transfer,
                                                            const Plan& plan, std::span<Buffer* const> bound);
  ~VulkanExecutable() override;

  const Plan& plan() const override { return plan_; }
  Buffer& buffer(uint32_t id) override { return *buffers_[id]; }
  const DeviceContext* context() const { return ctx_.get(); }

  // Checks the step (core/hal/step_check.h) and writes its arrays; waits for
  // this executable's previous step first, which reads the same memory.
  Status prepare(const StepArgs& args);
  VkCommandBuffer command_buffer() const;
  void submitted(uint64_t value) {
    last_submit_ = value;
    uncollected_ = true;
  }

 private:
  friend class ExecutableEncodeContext;
  VulkanExecutable(std::shared_ptr<DeviceContext> ctx, const Plan& plan) : ctx_(std::move(ctx)), plan_(plan) {}
  Status allocate_buffers(std::span<Buffer* const> bound);

  std::shared_ptr<DeviceContext> ctx_;
  Plan plan_;
  StepLimits limits_;
  std::vector<VulkanBuffer*> buffers_;                // by plan buffer id
  std::vector<std::unique_ptr<VulkanBuffer>> owned_;  // arena, step block and its views, scratch, tables
  VulkanBuffer* step_block_ = nullptr;     // step parameters, then each step array, device-local
  VulkanBuffer* step_staging_ = nullptr;   // its host-visible twin when the block is not mapped
  std::vector<uint64_t> field_offsets_;    // in the step block, by plan buffer id (step inputs)
  uint64_t step_block_bytes_ = 0;
  std::vector<EncodedDispatch> dispatches_;
  std::unique_ptr<Recording> recording_;
  uint64_t last_submit_ = 0;
  bool uncollected_ = false;  // the last step's timestamps are not in the profile yet
};

}  // namespace tessera::vulkan
