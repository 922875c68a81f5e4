#pragma once
// Large host buffers on transparent huge pages. Streaming a multi-GB weight
// set from 4 KiB pages takes a TLB miss every 4 KiB, and each page walk
// stalls the loads behind it; 2 MiB pages take one every 2 MiB. Linux gives
// them to anonymous memory advised with MADV_HUGEPAGE before it is first
// touched (the usual `madvise` mode of transparent_hugepage), so the buffer
// is 2 MiB aligned and advised at allocation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace tessera {

inline constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using HostBytes = std::unique_ptr<std::byte[], FreeDeleter>;

// At least `bytes` (rounded up to a whole huge page), not zeroed; null when
// the allocation fails. One allocation for many tensors wastes at most the
// last page's tail, where one per tensor would waste up to 2 MiB each.
HostBytes allocate_huge_pages(uint64_t bytes);

}  // namespace tessera
