#include "backends/vulkan/host_copies.h"

#include <cstring>

namespace tessera::vulkan {

void HostCopies::add(uint64_t value, const std::byte* from, std::byte* to, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  copies_.push_back({value, from, to, bytes});
}

void HostCopies::run_through(uint64_t value) {
  // Under the lock for the memcpy too: the stream reuses a copy's staging
  // bytes only once the copy has left the list, so no reader still reads them.
  std::lock_guard<std::mutex> lock(mutex_);
  while (!copies_.empty() && copies_.front().value <= value) {
    const Copy& c = copies_.front();
    std::memcpy(c.to, c.from, c.bytes);
    copies_.pop_front();
  }
}

}  // namespace tessera::vulkan
