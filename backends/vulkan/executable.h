#pragma once
// A Plan compiled for one Vulkan device: its arena and step inputs allocated,
// every dispatch encoded, pipelines and descriptor sets made, and command
// buffers recorded once. The shaders read the step parameters and arrays from
// one device-local step block; the host writes them into one of TWO
// host-visible step slots, and the slot's recorded command buffer first
// copies that slot into the block. Steps alternate slots, so preparing step
// N+1 waits only for step N-1 (the last to read that slot), never for step N:
// the host fills the next step's inputs while the device runs the current
// one. Overwriting the block is ordered after the previous step's shaders by
// the barrier each recorded buffer starts with.
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

  static constexpr uint32_t kSlots = 2;
  // Checks the step (core/hal/step_check.h) and writes its arrays into the
  // next slot, after waiting for the step that last used that slot; returns
  // the slot, whose command buffer the stream then submits.
  Expected<uint32_t> prepare(const StepArgs& args);
  VkCommandBuffer command_buffer(uint32_t slot) const;
  void submitted(uint32_t slot, uint64_t value) {
    slots_[slot].last_submit = value;
    slots_[slot].uncollected = true;
    next_slot_ = (slot + 1) % kSlots;
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
  VulkanBuffer* step_block_ = nullptr;   // step parameters, then each step array, device-local
  std::vector<uint64_t> field_offsets_;  // in the step block, by plan buffer id (step inputs)
  uint64_t step_block_bytes_ = 0;
  std::vector<EncodedDispatch> dispatches_;
  std::unique_ptr<Recording> recording_;
  struct StepSlot {
    VulkanBuffer* staging = nullptr;  // host-visible, the step block's layout
    uint64_t last_submit = 0;         // timeline value of the last step that read it
    bool uncollected = false;         // that step's timestamps are not in the profile yet
  };
  StepSlot slots_[kSlots];
  uint32_t next_slot_ = 0;
};

}  // namespace tessera::vulkan
