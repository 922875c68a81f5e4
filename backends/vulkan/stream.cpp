#include "backends/vulkan/stream.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/vulkan/executable.h"
#include "backends/vulkan/recording.h"

namespace tessera::vulkan {

namespace {

// Enough for a few copies in flight and a run between them; past it the
// stream waits for its oldest copy rather than growing without bound.
constexpr size_t kMaxPooledCommandBuffers = 8;

// One vkCmdCopyBuffer; `regions` are relative to each buffer's byte 0.
void record_copy(const VulkanApi& vk, VkCommandBuffer cb, const VulkanBuffer& from, const VulkanBuffer& to,
                 std::span<const VkBufferCopy> regions) {
  std::vector<VkBufferCopy> shifted(regions.begin(), regions.end());
  for (VkBufferCopy& r : shifted) {
    r.srcOffset += from.base();
    r.dstOffset += to.base();
  }
  vk.vkCmdCopyBuffer(cb, from.handle(), to.handle(), (uint32_t)shifted.size(), shifted.data());
}

// Between copies of one command buffer where a later one reads or
// overwrites what an earlier one wrote.
void transfer_barrier(const VulkanApi& vk, VkCommandBuffer cb) {
  memory_barrier(vk, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
}

// vkCmdCopyBuffer forbids regions whose sources and destinations (or two
// destinations) overlap in one buffer; such a batch is copied region by region.
bool regions_overlap(const VulkanBuffer& from, const VulkanBuffer& to, std::span<const VkBufferCopy> regions) {
  if (from.handle() != to.handle()) return false;
  struct Range {
    uint64_t begin, end;
  };
  std::vector<Range> dst, src;
  for (const VkBufferCopy& r : regions) {
    dst.push_back({to.base() + r.dstOffset, to.base() + r.dstOffset + r.size});
    src.push_back({from.base() + r.srcOffset, from.base() + r.srcOffset + r.size});
  }
  std::sort(dst.begin(), dst.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < dst.size(); ++i)
    if (dst[i].begin < dst[i - 1].end) return true;
  // Destinations are disjoint and sorted, so their ends are sorted too.
  for (const Range& s : src) {
    auto it = std::upper_bound(dst.begin(), dst.end(), s.begin, [](uint64_t x, const Range& d) { return x < d.end; });
    if (it != dst.end() && it->begin < s.end) return true;
  }
  return false;
}

VulkanBuffer* vulkan_buffer(Buffer& b) { return dynamic_cast<VulkanBuffer*>(&b); }

}  // namespace

VulkanStream::VulkanStream(std::shared_ptr<DeviceContext> ctx)
    : ctx_(ctx), owed_(std::make_shared<HostCopies>()), ring_(ctx, StagingRing::configured_capacity()) {}

Expected<std::unique_ptr<VulkanStream>> VulkanStream::create(std::shared_ptr<DeviceContext> ctx) {
  return std::unique_ptr<VulkanStream>(new VulkanStream(std::move(ctx)));
}

VulkanStream::~VulkanStream() {
  // The pooled command buffers, the ring and the caller's download spans
  // must all be done with before they go.
  (void)synchronize();
}

Expected<VkCommandBuffer> VulkanStream::begin_copies() {
  const uint64_t done = ctx_->completed();
  size_t pick = pool_.size();
  for (size_t i = 0; i < pool_.size() && pick == pool_.size(); ++i)
    if (pool_[i].value <= done) pick = i;
  if (pick == pool_.size() && pool_.size() < kMaxPooledCommandBuffers) {
    TS_ASSIGN_OR_RETURN(auto cb, CommandBuffer::create(*ctx_));
    pool_.push_back({std::move(cb), 0});
  } else if (pick == pool_.size()) {
    // All in flight: wait for the one submitted first.
    pick = (size_t)(std::min_element(pool_.begin(), pool_.end(), [](const auto& a, const auto& b) { return a.value < b.value; }) -
                    pool_.begin());
    TS_TRY(ctx_->wait(pool_[pick].value));
  }
  current_ = pick;
  const VulkanApi& vk = ctx_->vk();
  VkCommandBuffer cb = pool_[pick].cb->handle();
  TS_TRY(begin_copy_commands(vk, cb));
  return cb;
}

Expected<uint64_t> VulkanStream::submit_copies() {
  const VulkanApi& vk = ctx_->vk();
  VkCommandBuffer cb = pool_[current_].cb->handle();
  memory_barrier(vk, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT);
  TS_VK_TRY(vk.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  const uint64_t wait = wait_for_ > ctx_->completed() ? wait_for_ : 0;
  TS_ASSIGN_OR_RETURN(const uint64_t value, ctx_->submit(cb, wait));
  pool_[current_].value = value;
  last_ = value;
  wait_for_ = 0;
  return value;
}

Expected<uint64_t> VulkanStream::submit_copy(const VulkanBuffer& from, const VulkanBuffer& to, std::span<const VkBufferCopy> regions) {
  TS_ASSIGN_OR_RETURN(VkCommandBuffer cb, begin_copies());
  record_copy(ctx_->vk(), cb, from, to, regions);
  return submit_copies();
}

Status VulkanStream::upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  VulkanBuffer* to = vulkan_buffer(dst);
  if (!to || to->context() != ctx_.get()) return invalid_argument("vulkan upload: the buffer was not allocated by this vulkan device");
  if (offset > dst.size() || src.size() > dst.size() - offset)
    return out_of_range("vulkan upload: " + std::to_string(src.size()) + " bytes at offset " + std::to_string(offset) +
                        " run past the end of a " + std::to_string(dst.size()) + "-byte buffer");
  for (uint64_t done = 0; done < src.size();) {
    const uint64_t n = std::min<uint64_t>(ring_.max_chunk(), src.size() - done);
    TS_ASSIGN_OR_RETURN(const StagingRing::Region r, ring_.reserve(n, *owed_));
    std::memcpy(r.host, src.data() + done, n);
    const VkBufferCopy region{r.offset, offset + done, n};
    auto value = submit_copy(ring_.buffer(), *to, {&region, 1});
    ring_.commit(value ? *value : 0);
    TS_TRY(value.status());
    done += n;
  }
  return Status::ok();
}

Status VulkanStream::download(std::span<std::byte> dst, Buffer& src, uint64_t offset) {
  VulkanBuffer* from = vulkan_buffer(src);
  if (!from || from->context() != ctx_.get())
    return invalid_argument("vulkan download: the buffer was not allocated by this vulkan device");
  if (offset > src.size() || dst.size() > src.size() - offset)
    return out_of_range("vulkan download: " + std::to_string(dst.size()) + " bytes at offset " + std::to_string(offset) +
                        " run past the end of a " + std::to_string(src.size()) + "-byte buffer");
  // Always through the ring, even from memory the host can see: a later
  // submission of this stream may overwrite the source before anyone asks
  // for the bytes, and the ring keeps them as they were at this point.
  for (uint64_t done = 0; done < dst.size();) {
    const uint64_t n = std::min<uint64_t>(ring_.max_chunk(), dst.size() - done);
    TS_ASSIGN_OR_RETURN(const StagingRing::Region r, ring_.reserve(n, *owed_));
    const VkBufferCopy region{offset + done, r.offset, n};
    auto value = submit_copy(*from, ring_.buffer(), {&region, 1});
    ring_.commit(value ? *value : 0);
    TS_TRY(value.status());
    owed_->add(*value, r.host, dst.data() + done, n);
    done += n;
  }
  return Status::ok();
}

Status VulkanStream::copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
  VulkanBuffer* from = vulkan_buffer(src);
  VulkanBuffer* to = vulkan_buffer(dst);
  if (!from || !to || from->context() != ctx_.get() || to->context() != ctx_.get())
    return invalid_argument("vulkan copy: a buffer was not allocated by this vulkan device");
  TS_TRY(check_copy_range(src, src_offset, dst, dst_offset, bytes));
  if (bytes == 0) return Status::ok();
  const VkBufferCopy region{src_offset, dst_offset, bytes};
  if (regions_overlap(*from, *to, {&region, 1})) {
    if (from->base() + src_offset == to->base() + dst_offset) return Status::ok();  // onto itself
    return copy_overlapping(*from, src_offset, *to, dst_offset, bytes);
  }
  return submit_copy(*from, *to, {&region, 1}).status();
}

Status VulkanStream::copy_overlapping(const VulkanBuffer& from, uint64_t src_offset, const VulkanBuffer& to, uint64_t dst_offset,
                                      uint64_t bytes) {
  // Moving up, the top chunk goes first (as memmove does), so every chunk is
  // read before a later one overwrites it; moving down, the bottom one.
  const bool upward = to.base() + dst_offset > from.base() + src_offset;
  const VulkanApi& vk = ctx_->vk();
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(ring_.max_chunk(), bytes - done);
    const uint64_t at = upward ? bytes - done - n : done;
    TS_ASSIGN_OR_RETURN(const StagingRing::Region r, ring_.reserve(n, *owed_));
    auto cb = begin_copies();
    if (!cb) {
      ring_.commit(0);
      return cb.status();
    }
    const VkBufferCopy out{src_offset + at, r.offset, n}, back{r.offset, dst_offset + at, n};
    record_copy(vk, *cb, from, ring_.buffer(), {&out, 1});
    transfer_barrier(vk, *cb);
    record_copy(vk, *cb, ring_.buffer(), to, {&back, 1});
    auto value = submit_copies();
    ring_.commit(value ? *value : 0);
    TS_TRY(value.status());
    done += n;
  }
  return Status::ok();
}

Status VulkanStream::copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) {
  TS_TRY(check_block_copies(pools, blocks));
  struct PoolRegions {
    const VulkanBuffer* from;
    const VulkanBuffer* to;
    std::vector<VkBufferCopy> regions;
  };
  std::vector<PoolRegions> batch;
  for (const KvPoolCopy& p : pools) {
    VulkanBuffer* from = vulkan_buffer(*p.src);
    VulkanBuffer* to = vulkan_buffer(*p.dst);
    if (!from || !to || from->context() != ctx_.get() || to->context() != ctx_.get())
      return invalid_argument("vulkan copy_blocks: a pool was not allocated by this vulkan device");
    PoolRegions pr{from, to, {}};
    for (const BlockCopy& b : blocks)
      pr.regions.push_back(VkBufferCopy{(uint64_t)b.src * p.block_bytes, (uint64_t)b.dst * p.block_bytes, p.block_bytes});
    batch.push_back(std::move(pr));
  }
  if (blocks.empty() || batch.empty()) return Status::ok();
  const VulkanApi& vk = ctx_->vk();
  TS_ASSIGN_OR_RETURN(VkCommandBuffer cb, begin_copies());
  for (const PoolRegions& pr : batch) {
    if (!regions_overlap(*pr.from, *pr.to, pr.regions)) {
      record_copy(vk, cb, *pr.from, *pr.to, pr.regions);  // one command for the pool's every block
      continue;
    }
    // A block both copied from and onto (a chain within one pool): one at a
    // time, in the order given, as the CPU copies them.
    for (const VkBufferCopy& r : pr.regions) {
      record_copy(vk, cb, *pr.from, *pr.to, {&r, 1});
      transfer_barrier(vk, cb);
    }
  }
  return submit_copies().status();
}

Status VulkanStream::run(Executable& exe, const StepArgs& args) {
  auto* vk = dynamic_cast<VulkanExecutable*>(&exe);
  if (!vk || vk->context() != ctx_.get()) return invalid_argument("vulkan stream: the executable was compiled for another device");
  TS_ASSIGN_OR_RETURN(const uint32_t slot, vk->prepare(args));
  const uint64_t wait = wait_for_ > ctx_->completed() ? wait_for_ : 0;
  TS_ASSIGN_OR_RETURN(last_, ctx_->submit(vk->command_buffer(slot), wait));
  wait_for_ = 0;
  vk->submitted(slot, last_);
  return Status::ok();
}

Status VulkanStream::record(Event& e) {
  auto* ve = dynamic_cast<VulkanEvent*>(&e);
  if (!ve || ve->context() != ctx_.get()) return invalid_argument("vulkan stream: the event was made by another device");
  ve->set(position(), owed_);
  return Status::ok();
}

Status VulkanStream::wait(Event& e) {
  auto* ve = dynamic_cast<VulkanEvent*>(&e);
  if (ve && ve->context() == ctx_.get()) {
    // On the queue: the stream's next submission waits for the value.
    wait_for_ = std::max(wait_for_, ve->value());
    return Status::ok();
  }
  return e.synchronize();  // another device's (or backend's): the host waits now
}

Status VulkanStream::synchronize() {
  const uint64_t target = position();
  TS_TRY(ctx_->wait(target));
  owed_->run_through(target);
  return Status::ok();
}

bool VulkanEvent::query() {
  if (value_ != 0 && ctx_->completed() < value_) return false;
  if (owed_) owed_->run_through(value_);
  return true;
}

Status VulkanEvent::synchronize() {
  TS_TRY(ctx_->wait(value_));
  if (owed_) owed_->run_through(value_);
  return Status::ok();
}

}  // namespace tessera::vulkan
