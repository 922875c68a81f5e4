#pragma once
// The host copies a stream owes: a download lands in the stream's staging
// ring when its queue copy finishes, and the bytes reach the caller's memory
// only when someone asks after that (Stream::synchronize, Event::synchronize
// or query of a later event, or the stream needing that staging space back).
// Events may ask from another thread than the stream's, so the list has its
// own lock; events share it with the stream (shared_ptr), so an event that
// outlives its stream still answers (the stream runs every copy as it goes).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

namespace tessera::vulkan {

class HostCopies {
 public:
  // `bytes` from `from` to `to` once the submission that signals `value` has finished.
  // Values are added in the order the stream submitted them.
  void add(uint64_t value, const std::byte* from, std::byte* to, uint64_t bytes);
  // Runs every copy owed for submissions up to `value`; the caller knows they have finished.
  void run_through(uint64_t value);

 private:
  struct Copy {
    uint64_t value;
    const std::byte* from;
    std::byte* to;
    uint64_t bytes;
  };
  std::mutex mutex_;
  std::deque<Copy> copies_;
};

}  // namespace tessera::vulkan
