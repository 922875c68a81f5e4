#pragma once
// A sequence's KV blocks as bytes, for moving them between workers
// (prefill/decode disaggregation). Blocks are opaque: block_bytes of a
// pool's element type (f32, f16, bf16, q8_0, fp8_e4m3 with its scales), so
// moving them moves every KV dtype alike. Pools go in KvCache::pools()
// order (every layer's K and V), blocks in block-table order.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "engine/kv/kv_cache.h"

namespace tessera {
class ModelRunner;
}

namespace tessera::disagg {

// What two workers' caches must agree on for blocks to move between them.
struct KvShape {
  int32_t block_size = 0;
  DType dtype = DType::f32;
  std::vector<uint64_t> pool_block_bytes;  // per pool
  uint64_t block_bytes_all_pools() const;
  bool operator==(const KvShape&) const = default;
};
KvShape kv_shape(const KvCache& kv);
// One line naming what differs (block size, dtype, pool count, a pool's block bytes).
Status check_same_shape(const KvShape& ours, const KvShape& theirs);

// Copies blocks `blocks` of pool `pool` into `out` (blocks.size() * block_bytes),
// through the stream of the device that holds the pool; returns when the bytes are there.
Status read_pool_blocks(ModelRunner& runner, const KvCache& kv, size_t pool, std::span<const int32_t> blocks, std::span<std::byte> out);
// Writes `in` into blocks `blocks` of pool `pool`; returns when the pool holds them.
Status write_pool_blocks(ModelRunner& runner, KvCache& kv, size_t pool, std::span<const int32_t> blocks, std::span<const std::byte> in);

// A whole sequence's K/V on the host: n_blocks blocks of every pool, pool
// after pool. What a decode worker assembles from the messages it receives.
struct KvPayload {
  KvShape shape;
  int32_t tokens = 0;    // positions whose K/V it holds
  int32_t n_blocks = 0;  // ceil(tokens / block_size)
  std::vector<std::byte> bytes;
  // Sizes `bytes` for `tokens` positions of `shape`.
  void allocate(const KvShape& s, int32_t n_tokens);
  uint64_t offset(size_t pool, int32_t block) const;  // of block `block` of pool `pool`
  std::span<std::byte> blocks(size_t pool, int32_t first, int32_t count);
  std::span<const std::byte> blocks(size_t pool, int32_t first, int32_t count) const;
};

}  // namespace tessera::disagg
