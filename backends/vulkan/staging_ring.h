#pragma once
// A stream's host-visible staging memory, used as a ring. An upload's bytes
// wait in a region until the queue copy that reads them has finished; a
// download's arrive in one and wait there for their host copy
// (host_copies.h). Regions are handed out in submission order and come back
// in that order, once the timeline passes the value of the submission that
// used them; when none is free the ring waits for the oldest. Memory is
// allocated on first use, so a stream that never copies through the host
// costs none. $TESSERA_VULKAN_RING_BYTES sets the size (tests shrink it to
// make the ring wrap).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/host_copies.h"

namespace tessera::vulkan {

class StagingRing {
 public:
  StagingRing(std::shared_ptr<DeviceContext> ctx, uint64_t capacity);
  // The size from $TESSERA_VULKAN_RING_BYTES, else the default.
  static uint64_t configured_capacity();

  // The largest region one reserve() hands out: half the ring, so one chunk
  // of a large copy is filled while the one before it is being copied.
  uint64_t max_chunk() const { return chunk_; }

  struct Region {
    uint64_t offset = 0;  // in buffer()
    std::byte* host = nullptr;
  };
  // `bytes` (at most max_chunk()) of free staging. Space comes back only after
  // `owed` has run its copies out of it. Blocks while the ring is full.
  Expected<Region> reserve(uint64_t bytes, HostCopies& owed);
  // The region reserve() just gave is used by the submission that signals
  // `value`; 0 when nothing was submitted (the space is free again at once).
  void commit(uint64_t value);
  const VulkanBuffer& buffer() const { return *buffer_; }

 private:
  struct Used {
    uint64_t offset, bytes, value;
  };
  // Where `bytes` fit between the newest region and the oldest, or UINT64_MAX.
  uint64_t fit(uint64_t bytes) const;
  void release_through(uint64_t value, HostCopies& owed);

  std::shared_ptr<DeviceContext> ctx_;
  uint64_t capacity_ = 0, chunk_ = 0;
  std::unique_ptr<VulkanBuffer> buffer_;
  std::deque<Used> used_;  // oldest first
};

}  // namespace tessera::vulkan
