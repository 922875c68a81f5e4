#pragma once
// The paged KV cache's host-side allocator. K and V live in fixed-size blocks
// (block_size tokens) in per-layer pools; a sequence is a block table, and
// token `position` of a sequence lives in pool slot
//   block_table[position / block_size] * block_size + position % block_size.
// Blocks are reference counted so that forked sequences share their prefix;
// a shared block is copied before it is written (copy-on-write), and the
// copy is handed back as an instruction for whoever owns the pools.
//
// Prefix caching: a held block may be marked cached (full, its contents
// final, indexed by a PrefixCache). A cached block is never written again (a
// sequence that would write into it copies it first), and when no sequence
// holds it any more it is kept, evictable, in least-recently-released order
// instead of going back to the free list. An allocation takes a free block
// first and evicts the least recently released cached block only when none is
// free, telling the eviction listener. With nothing ever marked cached the
// manager behaves as a plain reference-counted allocator.
// Every block is in exactly one state: free (ref 0, in the free list),
// evictable (ref 0, cached, in the LRU order) or held (ref > 0, cached or not).
// Not thread-safe: one scheduler owns it.
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/hal/block_copy.h"  // BlockCopy: copy pool block src to dst (every layer, K and V) before the next step writes
#include "core/status.h"

namespace tessera {

using SeqId = int64_t;

struct BlockManagerConfig {
  int32_t num_blocks = 0;   // >= 0; num_blocks * block_size must fit int32 (slots are int32)
  int32_t block_size = 16;  // tokens per block, > 0
};


class BlockManager {
 public:
  explicit BlockManager(BlockManagerConfig config);

  // An empty sequence. invalid_argument when `id` is already there.
  Status add_sequence(SeqId id);
  // A sequence that starts holding `blocks`, in order (a prefix found in the
  // cache): each block's ref count + 1, evictable ones held again; its length
  // is blocks.size() * block_size. Every block must be cached (full and
  // final) and appear once. Errors leave the manager unchanged:
  // invalid_argument (the id exists, a block is out of range, not cached, or
  // repeated).
  Status add_sequence(SeqId id, std::span<const int32_t> blocks);

  // Makes room for the sequence to hold `total_tokens` tokens, allocating
  // blocks as needed; a smaller count than length() changes nothing (the
  // cache never shrinks in place). When the last, partially filled block is
  // shared (ref count > 1) or cached and the new tokens go into it, it is
  // replaced by a fresh block and {old, new} is appended to *copies. Blocks
  // come from the free list, then by evicting cached blocks nobody holds.
  // Errors leave the manager unchanged: not_found (unknown id),
  // invalid_argument (negative count, or a copy is needed and `copies` is
  // null), resource_exhausted (fewer than blocks_needed() available).
  Status reserve(SeqId id, int32_t total_tokens, std::vector<BlockCopy>* copies = nullptr);
  // How many blocks reserve(id, total_tokens) would take, the copy of a
  // shared or cached last block included; for an unknown id, as for a new
  // empty sequence. A scheduler compares it with available_blocks().
  int32_t blocks_needed(SeqId id, int32_t total_tokens) const;

  // The child shares every block of the parent (ref counts + 1) and its
  // length. not_found for an unknown parent, invalid_argument when the child exists.
  Status fork(SeqId parent, SeqId child);

  // Shortens the sequence to its first `tokens` tokens (speculative decoding's
  // rollback): blocks past ceil(tokens / block_size) are dropped (freed, or
  // evictable if cached, when no other sequence holds them); the last kept
  // block stays, and if it is shared or cached the next reserve that writes
  // into it copies it first. not_found for an unknown id; invalid_argument for
  // a count outside [0, length()].
  Status truncate(SeqId id, int32_t tokens);

  // Drops the sequence, its blocks last to first, so that of its cached
  // blocks the tail is evicted before the head; blocks whose ref count
  // reaches 0 are free again, or evictable if cached. An unknown id
  // (including one already released) is a no-op.
  void release(SeqId id);

  std::span<const int32_t> block_table(SeqId id) const;  // empty for an unknown id
  int32_t length(SeqId id) const;                        // tokens reserved; 0 for an unknown id
  // Pool slot of token `position`; -1 when the id is unknown or position is
  // not in [0, length).
  int32_t slot(SeqId id, int32_t position) const;
  // A number that changes whenever the tokens a sequence already holds may no
  // longer be what they were: it is new at add_sequence and fork and changes
  // at every truncate (growing keeps it). 0 for an unknown id. Lets a prefix
  // cache trust what it learned of a sequence's blocks earlier.
  uint64_t generation(SeqId id) const;

  // Prefix caching. mark_cached: the block's contents are full and final;
  // only a held block can be marked (its contents are what its holder
  // computed): invalid_argument otherwise; marking twice is a no-op.
  Status mark_cached(int32_t block);
  // Un-marks the block without telling the listener (the cache itself drops
  // it); an evictable block becomes free. A block not cached is left alone.
  void uncache(int32_t block);
  bool is_cached(int32_t block) const;
  // Called with each cached block an allocation evicts, already un-marked and
  // about to be handed to a sequence. One listener; an empty one removes it.
  void set_eviction_listener(std::function<void(int32_t block)> listener);

  // Truly free blocks (neither held nor cached).
  int32_t free_blocks() const { return (int32_t)free_list_.size(); }
  // Cached blocks no sequence holds: kept until an allocation needs them.
  int32_t evictable_blocks() const { return evictable_; }
  // What allocations may still take: free + evictable.
  int32_t available_blocks() const { return free_blocks() + evictable_blocks(); }
  // Cached blocks, held or evictable.
  int32_t cached_blocks() const { return cached_; }
  int32_t num_blocks() const { return config_.num_blocks; }
  int32_t block_size() const { return config_.block_size; }
  bool has(SeqId id) const { return seqs_.count(id) != 0; }
  size_t num_sequences() const { return seqs_.size(); }
  // ceil(tokens / block_size).
  int32_t blocks_for(int32_t tokens) const;
  // How many block tables hold `block` (0 = free or evictable).
  int32_t ref_count(int32_t block) const;

  // Recounts everything from the block tables: every block is exactly one of
  // free / evictable / held, ref counts equal the tables naming each block, the
  // free list has no repeats and no cached block, the evictable order holds
  // exactly the cached blocks of ref count 0, the counters match. internal
  // error naming the first broken block otherwise. O(blocks + table entries):
  // for tests and debugging.
  Status check_invariants() const;

 private:
  struct Sequence {
    std::vector<int32_t> blocks;
    int32_t length = 0;
    uint64_t generation = 0;
  };

  // A block taken from the free list, or evicted from the LRU order, held once.
  int32_t take_block();
  void drop_ref(int32_t block);
  void lru_push_back(int32_t block);
  void lru_unlink(int32_t block);
  bool writes_shared_or_cached_last(const Sequence& seq, int32_t total_tokens) const;

  BlockManagerConfig config_;
  std::vector<int32_t> ref_counts_;
  std::vector<uint8_t> cached_flags_;
  std::vector<int32_t> free_list_;  // LIFO: the most recently freed block is reused first
  // Evictable blocks as a doubly linked list through per-block links; index
  // num_blocks is the sentinel: its next is the least recently released.
  std::vector<int32_t> lru_prev_, lru_next_;
  int32_t evictable_ = 0;
  int32_t cached_ = 0;
  std::function<void(int32_t)> on_evict_;
  uint64_t next_generation_ = 1;
  std::unordered_map<SeqId, Sequence> seqs_;
};

}  // namespace tessera
