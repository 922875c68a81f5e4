#include "engine/kv/block_manager.h"

#include <cassert>
#include <limits>
#include <string>

namespace tessera {

BlockManager::BlockManager(BlockManagerConfig config) : config_(config) {
  assert(config_.block_size > 0 && config_.num_blocks >= 0);
  assert((int64_t)config_.num_blocks * config_.block_size <= std::numeric_limits<int32_t>::max());
  ref_counts_.assign((size_t)config_.num_blocks, 0);
  free_list_.reserve((size_t)config_.num_blocks);
  // Pushed in reverse so that block 0 is handed out first.
  for (int32_t b = config_.num_blocks - 1; b >= 0; --b) free_list_.push_back(b);
}

int32_t BlockManager::blocks_for(int32_t tokens) const {
  if (tokens <= 0) return 0;
  return (int32_t)(((int64_t)tokens + config_.block_size - 1) / config_.block_size);
}

int32_t BlockManager::ref_count(int32_t block) const {
  if (block < 0 || block >= config_.num_blocks) return 0;
  return ref_counts_[(size_t)block];
}

int32_t BlockManager::pop_free_block() {
  assert(!free_list_.empty());
  const int32_t b = free_list_.back();
  free_list_.pop_back();
  assert(ref_counts_[(size_t)b] == 0);
  ref_counts_[(size_t)b] = 1;
  return b;
}

void BlockManager::drop_ref(int32_t block) {
  int32_t& rc = ref_counts_[(size_t)block];
  assert(rc > 0);
  if (--rc == 0) free_list_.push_back(block);
}

Status BlockManager::add_sequence(SeqId id) {
  if (has(id)) return invalid_argument("kv: sequence " + std::to_string(id) + " already exists");
  seqs_.emplace(id, Sequence{});
  return Status::ok();
}

Status BlockManager::reserve(SeqId id, int32_t total_tokens, std::vector<BlockCopy>* copies) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return not_found("kv: reserve: no sequence " + std::to_string(id));
  if (total_tokens < 0) {
    return invalid_argument("kv: reserve: sequence " + std::to_string(id) + ": token count must be >= 0, got " +
                            std::to_string(total_tokens));
  }
  Sequence& seq = it->second;
  if (total_tokens <= seq.length) return Status::ok();

  // New tokens land in the last block only when it is partially filled.
  const bool writes_last = seq.length % config_.block_size != 0;
  const bool needs_copy = writes_last && ref_counts_[(size_t)seq.blocks.back()] > 1;
  const int32_t new_blocks = blocks_for(total_tokens) - (int32_t)seq.blocks.size();
  const int32_t needed = new_blocks + (needs_copy ? 1 : 0);
  if (needed > free_blocks()) {
    return resource_exhausted("kv: sequence " + std::to_string(id) + " needs " + std::to_string(needed) +
                              " more blocks of " + std::to_string(config_.block_size) + " tokens to hold " +
                              std::to_string(total_tokens) + " tokens; " + std::to_string(free_blocks()) +
                              " of " + std::to_string(config_.num_blocks) + " are free");
  }
  if (needs_copy && copies == nullptr) {
    return invalid_argument("kv: reserve: sequence " + std::to_string(id) +
                            " must copy its shared last block, but no copy list was given");
  }
  if (needs_copy) {
    const int32_t src = seq.blocks.back();
    const int32_t dst = pop_free_block();
    drop_ref(src);
    seq.blocks.back() = dst;
    copies->push_back({src, dst});
  }
  seq.blocks.reserve((size_t)blocks_for(total_tokens));
  for (int32_t i = 0; i < new_blocks; ++i) seq.blocks.push_back(pop_free_block());
  seq.length = total_tokens;
  return Status::ok();
}

Status BlockManager::fork(SeqId parent, SeqId child) {
  auto it = seqs_.find(parent);
  if (it == seqs_.end()) return not_found("kv: fork: no parent sequence " + std::to_string(parent));
  if (has(child)) return invalid_argument("kv: fork: child sequence " + std::to_string(child) + " already exists");
  Sequence copy = it->second;  // copied before emplace, which may rehash
  for (int32_t b : copy.blocks) ++ref_counts_[(size_t)b];
  seqs_.emplace(child, std::move(copy));
  return Status::ok();
}

Status BlockManager::truncate(SeqId id, int32_t tokens) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return not_found("kv: truncate: no sequence " + std::to_string(id));
  Sequence& seq = it->second;
  if (tokens < 0 || tokens > seq.length)
    return invalid_argument("kv: truncate: sequence " + std::to_string(id) + " holds " + std::to_string(seq.length) +
                            " tokens; cannot keep " + std::to_string(tokens));
  const size_t keep = (size_t)blocks_for(tokens);
  // Dropped from the end, so the LIFO hands the earliest of them out first.
  while (seq.blocks.size() > keep) {
    drop_ref(seq.blocks.back());
    seq.blocks.pop_back();
  }
  seq.length = tokens;
  return Status::ok();
}

void BlockManager::release(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  // Freed in reverse so the LIFO hands the sequence's first block out first again.
  for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) drop_ref(*b);
  seqs_.erase(it);
}

std::span<const int32_t> BlockManager::block_table(SeqId id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return {};
  return it->second.blocks;
}

int32_t BlockManager::length(SeqId id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? 0 : it->second.length;
}

int32_t BlockManager::slot(SeqId id, int32_t position) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || position < 0 || position >= it->second.length) return -1;
  const int32_t bs = config_.block_size;
  return it->second.blocks[(size_t)(position / bs)] * bs + position % bs;
}

}  // namespace tessera
