#include "backends/vulkan/stream.h"

#include "backends/vulkan/executable.h"
#include "backends/vulkan/recording.h"

namespace tessera::vulkan {

Expected<std::unique_ptr<VulkanStream>> VulkanStream::create(std::shared_ptr<DeviceContext> ctx) {
  std::unique_ptr<VulkanStream> s(new VulkanStream(ctx));
  TS_ASSIGN_OR_RETURN(s->transfer_, Transfer::create(ctx));
  return s;
}

VulkanStream::~VulkanStream() { (void)ctx_->wait(last_); }

Status VulkanStream::upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  auto* vb = dynamic_cast<VulkanBuffer*>(&dst);
  if (!vb) return invalid_argument("vulkan upload: the buffer was not allocated by a vulkan device");
  return transfer_->write(*vb, offset, src, last_);
}

Status VulkanStream::download(std::span<std::byte> dst, Buffer& src, uint64_t offset) {
  auto* vb = dynamic_cast<VulkanBuffer*>(&src);
  if (!vb) return invalid_argument("vulkan download: the buffer was not allocated by a vulkan device");
  return transfer_->read(dst, *vb, offset, last_);
}

Status VulkanStream::run(Executable& exe, const StepArgs& args) {
  auto* vk = dynamic_cast<VulkanExecutable*>(&exe);
  if (!vk || vk->context() != ctx_.get()) return invalid_argument("vulkan stream: the executable was compiled for another device");
  TS_TRY(vk->prepare(args));
  TS_ASSIGN_OR_RETURN(last_, ctx_->submit(vk->command_buffer()));
  vk->submitted(last_);
  return Status::ok();
}

Status VulkanStream::copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
  auto* from = dynamic_cast<VulkanBuffer*>(&src);
  auto* to = dynamic_cast<VulkanBuffer*>(&dst);
  if (!from || !to) return invalid_argument("vulkan copy: a buffer was not allocated by a vulkan device");
  TS_TRY(check_copy_range(src, src_offset, dst, dst_offset, bytes));
  if (bytes == 0) return Status::ok();
  const Transfer::Regions r{from, to, {VkBufferCopy{src_offset, dst_offset, bytes}}};
  return transfer_->copy_regions({&r, 1}, last_);
}

Status VulkanStream::copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) {
  TS_TRY(check_block_copies(pools, blocks));
  if (blocks.empty()) return Status::ok();
  std::vector<Transfer::Regions> batches;
  for (const KvPoolCopy& p : pools) {
    auto* from = dynamic_cast<VulkanBuffer*>(p.src);
    auto* to = dynamic_cast<VulkanBuffer*>(p.dst);
    if (!from || !to) return invalid_argument("vulkan copy_blocks: a pool was not allocated by a vulkan device");
    Transfer::Regions r{from, to, {}};
    for (const BlockCopy& b : blocks)
      r.regions.push_back(VkBufferCopy{(uint64_t)b.src * p.block_bytes, (uint64_t)b.dst * p.block_bytes, p.block_bytes});
    batches.push_back(std::move(r));
  }
  return transfer_->copy_regions(batches, last_);
}

Status VulkanStream::record(Event& e) {
  auto* ve = dynamic_cast<VulkanEvent*>(&e);
  if (!ve || ve->context() != ctx_.get()) return invalid_argument("vulkan stream: the event was made by another device");
  ve->set(last_);
  return Status::ok();
}

Status VulkanStream::wait(Event& e) {
  // Submissions on the device's one queue finish in order, so an event of this
  // device is behind whatever this stream submits next only if already
  // submitted; waiting for its value on the host keeps that true for any event.
  return e.synchronize();
}

Status VulkanStream::synchronize() { return ctx_->wait(last_); }

bool VulkanEvent::query() { return value_ == 0 || ctx_->completed() >= value_; }

}  // namespace tessera::vulkan
