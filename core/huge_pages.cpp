#include "core/huge_pages.h"

#include <algorithm>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera {

HostBytes allocate_huge_pages(uint64_t bytes) {
  const uint64_t size = (std::max<uint64_t>(bytes, 1) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kHugePageBytes, size));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p) madvise(p, size, MADV_HUGEPAGE);  // advice only: without THP the buffer is still usable
#endif
  return HostBytes(p);
}

}  // namespace tessera
