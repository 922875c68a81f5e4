#pragma once
// Batched copies of KV-cache blocks between pools of one device: copy-on-write
// (a shared block duplicated before a sequence writes into it), swapping blocks
// to host memory and back, and handing blocks from one worker to another. One
// call copies every listed block in every listed pool, in stream order.
#include <cstdint>

namespace tessera {

class Buffer;

// Block `src` of a source pool to block `dst` of its destination pool.
struct BlockCopy {
  int32_t src = 0, dst = 0;
  bool operator==(const BlockCopy&) const = default;
};

// One pool's part in a batched copy: a layer's K or V pool, and where its
// blocks go (the same buffer for copy-on-write). Block b is the byte range
// [b * block_bytes, (b + 1) * block_bytes) of each.
struct KvPoolCopy {
  Buffer* src = nullptr;
  Buffer* dst = nullptr;
  uint64_t block_bytes = 0;
};

}  // namespace tessera
