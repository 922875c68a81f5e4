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

Status VulkanStream::synchronize() { return ctx_->wait(last_); }

}  // namespace tessera::vulkan
