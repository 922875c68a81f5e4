#include "backends/vulkan/transfer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tessera::vulkan {

namespace {

constexpr uint64_t kStagingBytes = 32ull << 20;

}  // namespace

bool force_staging() {
  static const bool on = [] {
    const char* v = std::getenv("TESSERA_VULKAN_STAGING");
    return v && *v && *v != '0';
  }();
  return on;
}

Expected<std::unique_ptr<Transfer>> Transfer::create(std::shared_ptr<DeviceContext> ctx) {
  std::unique_ptr<Transfer> t(new Transfer(ctx));
  TS_ASSIGN_OR_RETURN(t->cb_, CommandBuffer::create(*ctx));
  return t;
}

Status Transfer::ensure_staging() {
  if (staging_) return Status::ok();
  TS_ASSIGN_OR_RETURN(staging_, VulkanBuffer::create(ctx_, kStagingBytes, MemoryUse::step_input, MemoryKind::staging));
  if (!staging_->mapped()) return internal_error("vulkan: staging memory is not host-visible");
  return Status::ok();
}

// Runs the copy as one submission, ordered after all earlier submissions by
// a full barrier, and waits for it.
Status Transfer::copy(const VulkanBuffer& from, uint64_t from_off, const VulkanBuffer& to, uint64_t to_off, uint64_t bytes) {
  const VulkanApi& vk = ctx_->vk();
  VkCommandBuffer cb = cb_->handle();
  TS_TRY(begin_copy_commands(vk, cb));
  const VkBufferCopy region{from.base() + from_off, to.base() + to_off, bytes};
  vk.vkCmdCopyBuffer(cb, from.handle(), to.handle(), 1, &region);
  memory_barrier(vk, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
  TS_VK_TRY(vk.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  TS_ASSIGN_OR_RETURN(const uint64_t value, ctx_->submit(cb));
  return ctx_->wait(value);
}

Status Transfer::write(VulkanBuffer& dst, uint64_t offset, std::span<const std::byte> src, uint64_t after) {
  if (offset > dst.size() || src.size() > dst.size() - offset)
    return out_of_range("vulkan upload: " + std::to_string(src.size()) + " bytes at offset " + std::to_string(offset) +
                        " run past the end of a " + std::to_string(dst.size()) + "-byte buffer");
  if (dst.context() != ctx_.get()) return invalid_argument("vulkan upload: the buffer belongs to another device");
  std::lock_guard<std::mutex> lock(mutex_);
  TS_TRY(ctx_->wait(after));
  if (dst.mapped() && !force_staging()) {
    std::memcpy(dst.mapped() + offset, src.data(), src.size());
    return Status::ok();
  }
  TS_TRY(ensure_staging());
  for (uint64_t done = 0; done < src.size();) {
    const uint64_t n = std::min<uint64_t>(kStagingBytes, src.size() - done);
    std::memcpy(staging_->mapped(), src.data() + done, n);
    TS_TRY(copy(*staging_, 0, dst, offset + done, n));
    done += n;
  }
  return Status::ok();
}

Status Transfer::read(const VulkanBuffer& src, uint64_t offset, std::span<std::byte> dst) {
  if (offset > src.size() || dst.size() > src.size() - offset)
    return out_of_range("vulkan read-back: " + std::to_string(dst.size()) + " bytes at offset " + std::to_string(offset) +
                        " run past the end of a " + std::to_string(src.size()) + "-byte buffer");
  if (src.context() != ctx_.get()) return invalid_argument("vulkan read-back: the buffer belongs to another device");
  std::lock_guard<std::mutex> lock(mutex_);
  if (src.mapped() && !force_staging()) {
    TS_TRY(ctx_->wait(ctx_->last_submitted()));
    std::memcpy(dst.data(), src.mapped() + offset, dst.size());
    return Status::ok();
  }
  TS_TRY(ensure_staging());
  for (uint64_t done = 0; done < dst.size();) {
    const uint64_t n = std::min<uint64_t>(kStagingBytes, dst.size() - done);
    TS_TRY(copy(src, offset + done, *staging_, 0, n));
    std::memcpy(dst.data() + done, staging_->mapped(), n);
    done += n;
  }
  return Status::ok();
}

}  // namespace tessera::vulkan
