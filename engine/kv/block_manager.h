#pragma once
// The paged KV cache's host-side allocator. K and V live in fixed-size blocks
// (block_size tokens) in per-layer pools; a sequence is a block table, and
// token `position` of a sequence lives in pool slot
//   block_table[position / block_size] * block_size + position % block_size.
// Blocks are reference counted so that forked sequences share their prefix;
// a shared block is copied before it is written (copy-on-write), and the
// copy is handed back as an instruction for whoever owns the pools.
// Not thread-safe: one scheduler owns it.
#include <cstdint>
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

  // invalid_argument when `id` is already there.
  Status add_sequence(SeqId id);

  // Makes room for the sequence to hold `total_tokens` tokens, allocating
  // blocks as needed; a smaller count than length() changes nothing (the
  // cache never shrinks in place). When the last, partially filled block is
  // shared (ref count > 1) and the new tokens go into it, it is replaced by a
  // fresh block and {old, new} is appended to *copies. Errors leave the
  // manager unchanged: not_found (unknown id), invalid_argument (negative
  // count, or a copy is needed and `copies` is null), resource_exhausted (not
  // enough free blocks).
  Status reserve(SeqId id, int32_t total_tokens, std::vector<BlockCopy>* copies = nullptr);

  // The child shares every block of the parent (ref counts + 1) and its
  // length. not_found for an unknown parent, invalid_argument when the child exists.
  Status fork(SeqId parent, SeqId child);

  // Shortens the sequence to its first `tokens` tokens (speculative decoding's
  // rollback): blocks past ceil(tokens / block_size) are dropped (freed when
  // no other sequence holds them); the last kept block stays, and if it is
  // shared the next reserve that writes into it copies it first. not_found for
  // an unknown id; invalid_argument for a count outside [0, length()].
  Status truncate(SeqId id, int32_t tokens);

  // Drops the sequence; blocks whose ref count reaches 0 are free again.
  // An unknown id (including one already released) is a no-op.
  void release(SeqId id);

  std::span<const int32_t> block_table(SeqId id) const;  // empty for an unknown id
  int32_t length(SeqId id) const;                        // tokens reserved; 0 for an unknown id
  // Pool slot of token `position`; -1 when the id is unknown or position is
  // not in [0, length).
  int32_t slot(SeqId id, int32_t position) const;

  int32_t free_blocks() const { return (int32_t)free_list_.size(); }
  int32_t num_blocks() const { return config_.num_blocks; }
  int32_t block_size() const { return config_.block_size; }
  bool has(SeqId id) const { return seqs_.count(id) != 0; }
  size_t num_sequences() const { return seqs_.size(); }
  // ceil(tokens / block_size).
  int32_t blocks_for(int32_t tokens) const;
  // How many block tables hold `block` (0 = free).
  int32_t ref_count(int32_t block) const;

 private:
  struct Sequence {
    std::vector<int32_t> blocks;
    int32_t length = 0;
  };

  int32_t pop_free_block();
  void drop_ref(int32_t block);

  BlockManagerConfig config_;
  std::vector<int32_t> ref_counts_;
  std::vector<int32_t> free_list_;  // LIFO: the most recently freed block is reused first
  std::unordered_map<SeqId, Sequence> seqs_;
};

}  // namespace tessera
