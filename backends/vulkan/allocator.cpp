#include "backends/vulkan/allocator.h"

#include <algorithm>
#include <string>

#include "backends/vulkan/context.h"

namespace tessera::vulkan {

namespace {

constexpr uint64_t kDefaultBlockBytes = 256ull << 20;
// Shaders read whole 32-bit words, and a quant block through the 16-byte
// words that cover it (up to 14 bytes past its end): every buffer gets this
// much addressable slack at its end (recording.cpp binds it for weights).
constexpr uint64_t kTailBytes = 32;

uint64_t align_up(uint64_t x, uint64_t a) { return a ? (x + a - 1) / a * a : x; }

std::string mib(uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

MemoryAllocator::MemoryAllocator(DeviceContext& ctx) : ctx_(ctx) {
  // A few large blocks, but never more than a quarter of the smallest device heap.
  uint64_t smallest_heap = UINT64_MAX;
  const auto& mem = ctx.physical().memory;
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h) smallest_heap = std::min(smallest_heap, mem.memoryHeaps[h].size);
  block_bytes_ = std::min(kDefaultBlockBytes, std::max<uint64_t>(smallest_heap / 4, 16ull << 20));
}

MemoryAllocator::~MemoryAllocator() {
  for (auto& [type, blocks] : blocks_)
    for (auto& b : blocks)
      if (b.memory) ctx_.vk().vkFreeMemory(ctx_.device(), b.memory, nullptr);
}

Expected<uint32_t> MemoryAllocator::choose_type(uint32_t allowed, MemoryKind kind) const {
  const auto& mem = ctx_.physical().memory;
  // Preference lists: the first property set some allowed type has wins.
  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  struct Want {
    VkMemoryPropertyFlags required, avoided;
  };
  std::vector<Want> wants;
  if (kind == MemoryKind::device_local)
    wants = {{local, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT}, {local, 0}, {0, 0}};  // keep small host-visible BARs free
  else
    wants = {{host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0}, {host, 0}};
  for (const Want& w : wants)
    for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
      if ((allowed & (1u << i)) && (f & w.required) == w.required && !(f & w.avoided)) return i;
    }
  return unsupported(std::string("vulkan: no memory type for ") +
                     (kind == MemoryKind::device_local ? "device-local buffers" : "host-visible staging"));
}

Expected<MemoryAllocator::Block> MemoryAllocator::new_block(uint32_t type, uint64_t size, const char* what) {
  const VulkanApi& vk = ctx_.vk();
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = size;
  ai.memoryTypeIndex = type;
  Block b;
  b.size = size;
  const VkResult r = vk.vkAllocateMemory(ctx_.device(), &ai, nullptr, &b.memory);
  if (r != VK_SUCCESS)
    return resource_exhausted("vulkan: cannot allocate " + mib(size) + " of device memory for " + what + " (" + to_string(r) +
                              "; " + mib(in_use_) + " in use)");
  if (ctx_.physical().memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    void* p = nullptr;
    const VkResult m = vk.vkMapMemory(ctx_.device(), b.memory, 0, VK_WHOLE_SIZE, 0, &p);
    if (m != VK_SUCCESS) {
      vk.vkFreeMemory(ctx_.device(), b.memory, nullptr);
      return vk_failed("vkMapMemory", m);
    }
    b.mapped = static_cast<std::byte*>(p);
  }
  return b;
}

Expected<Allocation> MemoryAllocator::allocate(const VkMemoryRequirements& req, MemoryKind kind, const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  TS_ASSIGN_OR_RETURN(const uint32_t type, choose_type(req.memoryTypeBits, kind));
  const uint64_t alignment = std::max<uint64_t>(req.alignment, 16);
  const uint64_t size = align_up(req.size, alignment);
  auto& blocks = blocks_[type];

  // Large requests get their own VkDeviceMemory: they would fragment the blocks.
  if (size > block_bytes_ / 2) {
    TS_ASSIGN_OR_RETURN(Block b, new_block(type, size, what));
    in_use_ += size;
    return Allocation{b.memory, 0, size, b.mapped, type, -1};
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t bi = 0; bi < blocks.size(); ++bi) {
      Block& b = blocks[bi];
      for (auto it = b.free.begin(); it != b.free.end(); ++it) {
        const uint64_t start = align_up(it->first, alignment);
        if (start + size > it->first + it->second) continue;
        const uint64_t free_off = it->first, free_size = it->second;
        b.free.erase(it);
        if (start > free_off) b.free[free_off] = start - free_off;
        if (free_off + free_size > start + size) b.free[start + size] = free_off + free_size - (start + size);
        in_use_ += size;
        return Allocation{b.memory, start, size, b.mapped ? b.mapped + start : nullptr, type, (int32_t)bi};
      }
    }
    if (pass == 0) {
      TS_ASSIGN_OR_RETURN(Block b, new_block(type, block_bytes_, what));
      b.free[0] = block_bytes_;
      blocks.push_back(std::move(b));
    }
  }
  return internal_error("vulkan: allocator found no room in a fresh block");
}

void MemoryAllocator::release(const Allocation& a) {
  if (!a.memory) return;
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_ -= a.size;
  if (a.block < 0) {
    ctx_.vk().vkFreeMemory(ctx_.device(), a.memory, nullptr);
    return;
  }
  Block& b = blocks_[a.type][(size_t)a.block];
  auto [it, inserted] = b.free.emplace(a.offset, a.size);
  // Coalesce with the free ranges on either side.
  auto next = std::next(it);
  if (next != b.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b.free.erase(next);
  }
  if (it != b.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b.free.erase(it);
    }
  }
}

uint64_t MemoryAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

Expected<std::unique_ptr<VulkanBuffer>> VulkanBuffer::create(std::shared_ptr<DeviceContext> ctx, uint64_t bytes, MemoryUse use,
                                                             MemoryKind kind) {
  const VulkanApi& vk = ctx->vk();
  std::unique_ptr<VulkanBuffer> b(new VulkanBuffer());
  b->ctx_ = ctx;
  b->use_ = use;
  b->size_ = bytes;
  b->bound_ = align_up(bytes, 16) + kTailBytes;
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = b->bound_;
  ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  TS_VK_TRY(vk.vkCreateBuffer(ctx->device(), &ci, nullptr, &b->handle_), "vkCreateBuffer");
  b->owns_ = true;
  VkMemoryRequirements req{};
  vk.vkGetBufferMemoryRequirements(ctx->device(), b->handle_, &req);
  TS_ASSIGN_OR_RETURN(b->alloc_, ctx->allocator().allocate(req, kind, to_string(use)));
  TS_VK_TRY(vk.vkBindBufferMemory(ctx->device(), b->handle_, b->alloc_.memory, b->alloc_.offset), "vkBindBufferMemory");
  b->mapped_ = b->alloc_.mapped;
  return b;
}

std::unique_ptr<VulkanBuffer> VulkanBuffer::view(const VulkanBuffer& parent, uint64_t offset, uint64_t bytes, MemoryUse use) {
  std::unique_ptr<VulkanBuffer> b(new VulkanBuffer());
  b->ctx_ = parent.ctx_;
  b->handle_ = parent.handle_;
  b->base_ = parent.base_ + offset;
  b->size_ = bytes;
  b->bound_ = parent.bound_ - offset;
  b->mapped_ = parent.mapped_ ? parent.mapped_ + offset : nullptr;
  b->use_ = use;
  return b;
}

VulkanBuffer::~VulkanBuffer() {
  if (!owns_) return;
  ctx_->vk().vkDestroyBuffer(ctx_->device(), handle_, nullptr);
  ctx_->allocator().release(alloc_);
}

}  // namespace tessera::vulkan
