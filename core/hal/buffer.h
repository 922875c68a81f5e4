#pragma once
// Device memory. A buffer may or may not be visible to the host; code above
// backends/ moves data only through Stream::upload / download.
#include <cstddef>
#include <cstdint>

namespace tessera {

enum class MemoryUse : uint8_t {
  weights,      // written once at load, read every step
  activations,  // the plan's arena, rewritten every step
  kv_cache,     // paged K/V pools, live across steps
  step_input,   // small per-step arrays (token ids, positions, block tables)
  host_staging, // pinned host memory the device copies to and from; host_data() is its address
};
const char* to_string(MemoryUse u);

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual uint64_t size() const = 0;
  virtual MemoryUse use() const = 0;
  // Host address when the memory is host-visible (CPU backend), else null.
  virtual std::byte* host_data() { return nullptr; }
};

}  // namespace tessera
