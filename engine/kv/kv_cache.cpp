#include "engine/kv/kv_cache.h"

#include <limits>
#include <string>

namespace tessera {

namespace {
std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }
}  // namespace

Expected<KvCacheSpec> size_kv_cache(const KvSizing& s) {
  if (s.bytes_per_block == 0 || s.block_size < 1 || s.blocks_per_seq < 1 || s.max_seqs < 1)
    return invalid_argument("kv cache: block size, bytes per block, blocks per sequence and sequences must be positive");
  const uint64_t whole = (uint64_t)s.blocks_per_seq * (uint64_t)s.max_seqs;
  uint64_t blocks = s.budget_bytes == 0 ? whole : s.budget_bytes / s.bytes_per_block;
  // Slots are int32 (slot_mapping, block tables).
  blocks = std::min<uint64_t>(blocks, (uint64_t)std::numeric_limits<int32_t>::max() / (uint64_t)s.block_size);
  if (blocks < (uint64_t)s.blocks_per_seq)
    return resource_exhausted("--kv-cache-memory: " + std::to_string(s.budget_bytes) + " bytes hold " + std::to_string(blocks) +
                              " blocks of " + std::to_string(s.block_size) + " tokens (" + std::to_string(s.bytes_per_block) +
                              " bytes each over every layer); one sequence of the whole context needs " +
                              std::to_string(s.blocks_per_seq) + " (" + mib((uint64_t)s.blocks_per_seq * s.bytes_per_block) + ")");
  const uint64_t bytes = blocks * s.bytes_per_block;
  if (s.free_bytes > 0 && bytes > s.free_bytes)
    return resource_exhausted("kv cache: " + std::to_string(blocks) + " blocks need " + mib(bytes) + "; the device has " +
                              mib(s.free_bytes) + " free (lower --ctx or --kv-cache-memory)");
  return KvCacheSpec{(int32_t)blocks, s.block_size, s.dtype};
}

KvCache::KvCache(KvCacheSpec spec, std::vector<Pool> pools)
    : spec_(spec), pools_(std::move(pools)), blocks_({spec.num_blocks, spec.block_size}) {}

Buffer* KvCache::pool(const std::string& name) const {
  for (const Pool& p : pools_)
    if (p.name == name) return p.buffer.get();
  return nullptr;
}

std::vector<KvPoolCopy> KvCache::in_place_copies(size_t device) const {
  std::vector<KvPoolCopy> out;
  for (const Pool& p : pools_)
    if (p.device == device) out.push_back({p.buffer.get(), p.buffer.get(), p.block_bytes});
  return out;
}

uint64_t KvCache::bytes() const {
  uint64_t total = 0;
  for (const Pool& p : pools_) total += p.buffer->size();
  return total;
}

}  // namespace tessera
