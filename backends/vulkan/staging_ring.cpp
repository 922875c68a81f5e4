#include "backends/vulkan/staging_ring.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace tessera::vulkan {

namespace {

constexpr uint64_t kDefaultRingBytes = 16ull << 20;
constexpr uint64_t kMinRingBytes = 256;
constexpr uint64_t kRegionAlign = 16;  // copies need none; aligned memcpy is faster
constexpr uint64_t kNotSubmitted = UINT64_MAX;

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

uint64_t StagingRing::configured_capacity() {
  // Read at every stream's creation, not once: a test sets it for one stream.
  const char* v = std::getenv("TESSERA_VULKAN_RING_BYTES");
  if (!v || !*v) return kDefaultRingBytes;
  const uint64_t bytes = std::strtoull(v, nullptr, 10);
  return bytes ? std::max(bytes, kMinRingBytes) : kDefaultRingBytes;
}

StagingRing::StagingRing(std::shared_ptr<DeviceContext> ctx, uint64_t capacity)
    : ctx_(std::move(ctx)), capacity_(align_up(std::max(capacity, kMinRingBytes), kRegionAlign)) {
  chunk_ = capacity_ / 2 / kRegionAlign * kRegionAlign;
}

uint64_t StagingRing::fit(uint64_t bytes) const {
  if (used_.empty()) return bytes <= capacity_ ? 0 : UINT64_MAX;
  const uint64_t tail = used_.front().offset;                   // oldest region's start
  const uint64_t head = used_.back().offset + used_.back().bytes;  // newest region's end
  if (head > tail) {  // used space is [tail, head): free after it, or from 0 (wrapping)
    if (capacity_ - head >= bytes) return head;
    if (tail >= bytes) return 0;
    return UINT64_MAX;
  }
  // Wrapped: used space is [tail, capacity) and [0, head); head == tail is full.
  if (head < tail && tail - head >= bytes) return head;
  return UINT64_MAX;
}

void StagingRing::release_through(uint64_t value, HostCopies& owed) {
  owed.run_through(value);
  while (!used_.empty() && used_.front().value <= value) used_.pop_front();
}

Expected<StagingRing::Region> StagingRing::reserve(uint64_t bytes, HostCopies& owed) {
  if (bytes == 0 || bytes > chunk_)
    return internal_error("vulkan staging ring: a region of " + std::to_string(bytes) + " bytes (at most " + std::to_string(chunk_) +
                          ")");
  if (!buffer_) {
    TS_ASSIGN_OR_RETURN(buffer_, VulkanBuffer::create(ctx_, capacity_, MemoryUse::host_staging, MemoryKind::staging));
    if (!buffer_->mapped()) return internal_error("vulkan: staging memory is not host-visible");
  }
  if (!used_.empty() && used_.back().value == kNotSubmitted)
    return internal_error("vulkan staging ring: the last region was never committed");
  bytes = align_up(bytes, kRegionAlign);
  release_through(ctx_->completed(), owed);
  for (;;) {
    const uint64_t at = fit(bytes);
    if (at != UINT64_MAX) {
      used_.push_back({at, bytes, kNotSubmitted});
      return Region{at, buffer_->mapped() + at};
    }
    // Full: wait for the oldest region's copy, run what is owed out of it, retry.
    const uint64_t oldest = used_.front().value;
    TS_TRY(ctx_->wait(oldest));
    release_through(std::max(oldest, ctx_->completed()), owed);
  }
}

void StagingRing::commit(uint64_t value) {
  if (used_.empty()) return;
  if (value == 0) used_.pop_back();
  else used_.back().value = value;
}

}  // namespace tessera::vulkan
