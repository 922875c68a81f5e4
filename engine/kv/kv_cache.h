#pragma once
// The paged KV cache as one object: every layer's K and V pool on the device
// whose nodes read and write it, the block size and element type, and the
// BlockManager that hands out its blocks. The runner reads it (binds the pools
// into its plans, runs the block copies a step asks for); whoever schedules
// sequences owns it (a Session today, the serving scheduler later). Not
// thread-safe, like the BlockManager inside it: one owner drives it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/hal/block_copy.h"
#include "core/hal/buffer.h"
#include "core/status.h"
#include "engine/kv/block_manager.h"

namespace tessera {

// What the graph is built for: pools of num_blocks blocks of block_size tokens.
struct KvCacheSpec {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  DType dtype = DType::f32;
};

// How many blocks a memory budget buys. bytes_per_block counts one block of
// every layer's K and V pools; budget 0 means "enough for max_seqs sequences
// of the whole context". A budget that cannot hold one sequence of the whole
// context is refused with one line naming both figures.
struct KvSizing {
  uint64_t budget_bytes = 0;
  uint64_t bytes_per_block = 0;
  int32_t block_size = 16;
  int32_t blocks_per_seq = 0;  // the whole context
  int32_t max_seqs = 1;
  uint64_t free_bytes = 0;     // the device's free memory when known (0: unknown), checked against the pools
  DType dtype = DType::f32;    // the pools' element type (bytes_per_block is counted in it)
};
Expected<KvCacheSpec> size_kv_cache(const KvSizing& s);

class KvCache {
 public:
  struct Pool {
    std::string name;  // the graph's pool value, e.g. "blk.3.k_cache"
    size_t device = 0; // the runner's device slot that holds it
    std::unique_ptr<Buffer> buffer;
    uint64_t block_bytes = 0;
  };
  KvCache(KvCacheSpec spec, std::vector<Pool> pools);

  const KvCacheSpec& spec() const { return spec_; }
  BlockManager& blocks() { return blocks_; }
  const BlockManager& blocks() const { return blocks_; }
  const std::vector<Pool>& pools() const { return pools_; }
  // The pool of that name, or null.
  Buffer* pool(const std::string& name) const;
  // The pools one device slot holds, as a batched copy of blocks in place
  // (copy-on-write: Stream::copy_blocks).
  std::vector<KvPoolCopy> in_place_copies(size_t device) const;
  uint64_t bytes() const;

 private:
  KvCacheSpec spec_;
  std::vector<Pool> pools_;
  BlockManager blocks_;
};

}  // namespace tessera
