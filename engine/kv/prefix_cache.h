#pragma once
// Prefix caching over a BlockManager: full KV blocks are indexed by a hash
// chain, so a new request whose prompt starts like an earlier one reuses the
// blocks that earlier one computed instead of recomputing them.
//
// Block i of a token sequence is keyed by
//   block_hash(key of block i-1 (kRootHash for block 0), its block_size token ids, salt),
// the salt being the model's identity (hash_bytes over whatever names the
// weights), so a key means the same tokens after the same prefix, for the
// same model. A 64-bit key can collide, so a key is never trusted alone: each
// entry keeps its block's token ids and the entry that certified its parent
// block, and a lookup follows those, so a block is reused only when every
// token before its end is the prompt's own.
//
// Cached blocks are marked in the BlockManager: never written again, and kept
// (evictable, least recently released first) when no sequence holds them
// until an allocation needs the room; an evicted block's entry goes.
// One owner, not thread-safe, like the BlockManager it indexes; it must not
// outlive that BlockManager.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/kv/block_manager.h"

namespace tessera {

struct PrefixCacheStats {
  int64_t queries = 0;       // match() calls
  int64_t query_tokens = 0;  // prompt tokens those calls looked up
  int64_t hit_tokens = 0;    // of those, the tokens the returned blocks cover
  int64_t evictions = 0;     // cached blocks the BlockManager took back for new allocations
};

class PrefixCache {
 public:
  static constexpr uint64_t kRootHash = 0;  // the parent key of a sequence's first block

  // How a block's key is computed: block_hash, unless a test passes a weak
  // one to show that colliding keys never hand out a wrong block.
  using KeyFn = uint64_t (*)(uint64_t parent, std::span<const int32_t> tokens, uint64_t salt);

  // Becomes `blocks`' eviction listener (there is one: one PrefixCache per BlockManager).
  PrefixCache(BlockManager& blocks, uint64_t salt, KeyFn key_fn = &PrefixCache::block_hash);
  // Un-marks every cached block: evictable ones become free.
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The longest run of cached full blocks that starts the prompt, in order,
  // into *blocks (cleared first), capped at (prompt.size() - 1) / block_size
  // blocks so that at least the last prompt token is computed again (its
  // logits are needed). Returns the tokens they cover (blocks->size() *
  // block_size). Counts one query; changes no ref count: hold the blocks with
  // BlockManager::add_sequence(id, *blocks) before the next allocation.
  int32_t match(std::span<const int32_t> prompt, std::vector<int32_t>* blocks);

  // Registers every full block of sequence `id` whose tokens are all computed
  // (positions < computed_tokens) and that it has not registered before:
  // incremental, so a long generation costs O(new blocks) (after a truncate,
  // seen through BlockManager::generation, the sequence's blocks are walked
  // again from its start). `tokens` are the sequence's tokens from position 0.
  // A block whose key is already cached under another block (the same
  // content computed twice) stays uncached. not_found for an id the
  // BlockManager does not know; invalid_argument when computed_tokens is
  // outside [0, min(tokens.size(), length(id))].
  Status insert(SeqId id, std::span<const int32_t> tokens, int32_t computed_tokens);
  // Drops what insert remembers of a sequence (call when it ends); its
  // cached blocks stay cached.
  void forget(SeqId id);

  const PrefixCacheStats& stats() const { return stats_; }
  int32_t cached_blocks() const { return (int32_t)by_key_.size(); }
  uint64_t salt() const { return salt_; }

  // The key of a block of `tokens` after a block keyed `parent`.
  static uint64_t block_hash(uint64_t parent, std::span<const int32_t> tokens, uint64_t salt);

  // Every entry names a block the BlockManager has marked cached, under the
  // key it is filed by, and every cached block has an entry. internal error
  // otherwise. For tests and debugging.
  Status check_invariants() const;

 private:
  // What one cached block certifies: these tokens, after the parent entry's prefix.
  struct Entry {
    uint64_t key = 0;
    uint64_t id = 0;         // unique for the cache's lifetime; 0 is the root
    uint64_t parent_id = 0;
    std::vector<int32_t> tokens;
  };
  // How far insert got through one sequence.
  struct Progress {
    uint64_t generation = 0;  // the BlockManager's generation of the sequence when walked
    int32_t blocks = 0;       // leading full blocks walked
    uint64_t key = kRootHash; // key of the last walked block
    uint64_t entry_id = 0;    // the entry certifying the walked prefix (0: root)
    bool certified = true;    // false after a key collision: nothing more is registered
  };

  void on_evicted(int32_t block);
  // The cached block filed under `key` that holds `tokens` after entry `parent_id`, or -1.
  int32_t find(uint64_t key, uint64_t parent_id, std::span<const int32_t> tokens) const;

  BlockManager& blocks_;
  uint64_t salt_;
  KeyFn key_fn_;
  int32_t block_size_;
  std::unordered_map<uint64_t, int32_t> by_key_;  // key -> cached block
  std::vector<Entry> entries_;                    // by block id; meaningful while the block is cached
  uint64_t next_entry_id_ = 1;
  std::unordered_map<SeqId, Progress> progress_;
  PrefixCacheStats stats_;
};

}  // namespace tessera
