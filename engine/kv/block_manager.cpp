#include "engine/kv/block_manager.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

namespace tessera {

namespace {
std::string str(int64_t v) { return std::to_string(v); }
}  // namespace

BlockManager::BlockManager(BlockManagerConfig config) : config_(config) {
  assert(config_.block_size > 0 && config_.num_blocks >= 0);
  assert((int64_t)config_.num_blocks * config_.block_size <= std::numeric_limits<int32_t>::max());
  const size_t n = (size_t)config_.num_blocks;
  ref_counts_.assign(n, 0);
  cached_flags_.assign(n, 0);
  lru_prev_.assign(n + 1, config_.num_blocks);
  lru_next_.assign(n + 1, config_.num_blocks);
  free_list_.reserve(n);
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

bool BlockManager::is_cached(int32_t block) const {
  return block >= 0 && block < config_.num_blocks && cached_flags_[(size_t)block] != 0;
}

void BlockManager::lru_push_back(int32_t block) {
  const int32_t sentinel = config_.num_blocks;
  const int32_t last = lru_prev_[(size_t)sentinel];
  lru_prev_[(size_t)block] = last;
  lru_next_[(size_t)block] = sentinel;
  lru_next_[(size_t)last] = block;
  lru_prev_[(size_t)sentinel] = block;
  ++evictable_;
}

void BlockManager::lru_unlink(int32_t block) {
  const int32_t prev = lru_prev_[(size_t)block];
  const int32_t next = lru_next_[(size_t)block];
  lru_next_[(size_t)prev] = next;
  lru_prev_[(size_t)next] = prev;
  lru_prev_[(size_t)block] = lru_next_[(size_t)block] = config_.num_blocks;
  --evictable_;
}

int32_t BlockManager::take_block() {
  int32_t b;
  if (!free_list_.empty()) {
    b = free_list_.back();
    free_list_.pop_back();
  } else {
    assert(evictable_ > 0);
    b = lru_next_[(size_t)config_.num_blocks];  // the least recently released
    lru_unlink(b);
    cached_flags_[(size_t)b] = 0;
    --cached_;
    if (on_evict_) on_evict_(b);
  }
  assert(ref_counts_[(size_t)b] == 0);
  ref_counts_[(size_t)b] = 1;
  return b;
}

void BlockManager::drop_ref(int32_t block) {
  int32_t& rc = ref_counts_[(size_t)block];
  assert(rc > 0);
  if (--rc != 0) return;
  if (cached_flags_[(size_t)block] != 0) {
    lru_push_back(block);
  } else {
    free_list_.push_back(block);
  }
}

Status BlockManager::add_sequence(SeqId id) {
  if (has(id)) return invalid_argument("kv: sequence " + str(id) + " already exists");
  seqs_.emplace(id, Sequence{.blocks = {}, .length = 0, .generation = next_generation_++});
  return Status::ok();
}

Status BlockManager::add_sequence(SeqId id, std::span<const int32_t> blocks) {
  if (has(id)) return invalid_argument("kv: sequence " + str(id) + " already exists");
  for (size_t i = 0; i < blocks.size(); ++i) {
    const int32_t b = blocks[i];
    const std::string where = "kv: add_sequence: sequence " + str(id) + ": block " + str(b) + " (at index " + str((int64_t)i) + ")";
    if (b < 0 || b >= config_.num_blocks) return invalid_argument(where + " is outside [0, " + str(config_.num_blocks) + ")");
    if (cached_flags_[(size_t)b] == 0) return invalid_argument(where + " is not cached");
  }
  std::vector<int32_t> sorted(blocks.begin(), blocks.end());
  std::sort(sorted.begin(), sorted.end());
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
    return invalid_argument("kv: add_sequence: sequence " + str(id) + ": block " + str(*dup) + " appears twice");

  for (int32_t b : blocks) {
    if (ref_counts_[(size_t)b] == 0) lru_unlink(b);
    ++ref_counts_[(size_t)b];
  }
  seqs_.emplace(id, Sequence{.blocks = std::vector<int32_t>(blocks.begin(), blocks.end()),
                             .length = (int32_t)blocks.size() * config_.block_size,
                             .generation = next_generation_++});
  return Status::ok();
}

bool BlockManager::writes_shared_or_cached_last(const Sequence& seq, int32_t total_tokens) const {
  // New tokens land in the last block only when it is partially filled.
  if (total_tokens <= seq.length || seq.length % config_.block_size == 0) return false;
  const int32_t last = seq.blocks.back();
  return ref_counts_[(size_t)last] > 1 || cached_flags_[(size_t)last] != 0;
}

int32_t BlockManager::blocks_needed(SeqId id, int32_t total_tokens) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return blocks_for(total_tokens);
  const Sequence& seq = it->second;
  if (total_tokens <= seq.length) return 0;
  return blocks_for(total_tokens) - (int32_t)seq.blocks.size() + (writes_shared_or_cached_last(seq, total_tokens) ? 1 : 0);
}

Status BlockManager::reserve(SeqId id, int32_t total_tokens, std::vector<BlockCopy>* copies) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return not_found("kv: reserve: no sequence " + str(id));
  if (total_tokens < 0) {
    return invalid_argument("kv: reserve: sequence " + str(id) + ": token count must be >= 0, got " + str(total_tokens));
  }
  Sequence& seq = it->second;
  if (total_tokens <= seq.length) return Status::ok();

  const bool needs_copy = writes_shared_or_cached_last(seq, total_tokens);
  const int32_t new_blocks = blocks_for(total_tokens) - (int32_t)seq.blocks.size();
  const int32_t needed = new_blocks + (needs_copy ? 1 : 0);
  if (needed > available_blocks()) {
    return resource_exhausted("kv: sequence " + str(id) + " needs " + str(needed) + " more blocks of " +
                              str(config_.block_size) + " tokens to hold " + str(total_tokens) + " tokens; " +
                              str(available_blocks()) + " of " + str(config_.num_blocks) +
                              " are free or evictable");
  }
  if (needs_copy && copies == nullptr) {
    return invalid_argument("kv: reserve: sequence " + str(id) +
                            " must copy its shared or cached last block, but no copy list was given");
  }
  seq.blocks.reserve((size_t)blocks_for(total_tokens));
  int32_t src = -1;
  if (needs_copy) {
    src = seq.blocks.back();
    const int32_t dst = take_block();
    seq.blocks.back() = dst;
    copies->push_back({src, dst});
  }
  for (int32_t i = 0; i < new_blocks; ++i) seq.blocks.push_back(take_block());
  // The copy's source is let go after the allocations, so it is never one of them.
  if (src >= 0) drop_ref(src);
  seq.length = total_tokens;
  return Status::ok();
}

Status BlockManager::fork(SeqId parent, SeqId child) {
  auto it = seqs_.find(parent);
  if (it == seqs_.end()) return not_found("kv: fork: no parent sequence " + str(parent));
  if (has(child)) return invalid_argument("kv: fork: child sequence " + str(child) + " already exists");
  Sequence copy = it->second;  // copied before emplace, which may rehash
  copy.generation = next_generation_++;
  for (int32_t b : copy.blocks) ++ref_counts_[(size_t)b];
  seqs_.emplace(child, std::move(copy));
  return Status::ok();
}

Status BlockManager::truncate(SeqId id, int32_t tokens) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return not_found("kv: truncate: no sequence " + str(id));
  Sequence& seq = it->second;
  if (tokens < 0 || tokens > seq.length)
    return invalid_argument("kv: truncate: sequence " + str(id) + " holds " + str(seq.length) +
                            " tokens; cannot keep " + str(tokens));
  if (tokens == seq.length) return Status::ok();
  const size_t keep = (size_t)blocks_for(tokens);
  // Dropped from the end, so the LIFO hands the earliest of them out first
  // and, of cached ones, the tail is evicted first.
  while (seq.blocks.size() > keep) {
    drop_ref(seq.blocks.back());
    seq.blocks.pop_back();
  }
  seq.length = tokens;
  seq.generation = next_generation_++;
  return Status::ok();
}

void BlockManager::release(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  // Freed in reverse so the LIFO hands the sequence's first block out first
  // again, and its cached tail is evicted before its head.
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

uint64_t BlockManager::generation(SeqId id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? 0 : it->second.generation;
}

int32_t BlockManager::slot(SeqId id, int32_t position) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || position < 0 || position >= it->second.length) return -1;
  const int32_t bs = config_.block_size;
  return it->second.blocks[(size_t)(position / bs)] * bs + position % bs;
}

Status BlockManager::mark_cached(int32_t block) {
  if (block < 0 || block >= config_.num_blocks)
    return invalid_argument("kv: mark_cached: block " + str(block) + " is outside [0, " + str(config_.num_blocks) + ")");
  if (ref_counts_[(size_t)block] == 0)
    return invalid_argument("kv: mark_cached: block " + str(block) + " is held by no sequence");
  if (cached_flags_[(size_t)block] == 0) {
    cached_flags_[(size_t)block] = 1;
    ++cached_;
  }
  return Status::ok();
}

void BlockManager::uncache(int32_t block) {
  if (!is_cached(block)) return;
  cached_flags_[(size_t)block] = 0;
  --cached_;
  if (ref_counts_[(size_t)block] == 0) {
    lru_unlink(block);
    free_list_.push_back(block);
  }
}

void BlockManager::set_eviction_listener(std::function<void(int32_t block)> listener) {
  on_evict_ = std::move(listener);
}

Status BlockManager::check_invariants() const {
  const int32_t n = config_.num_blocks;
  auto broken = [](int32_t b, const std::string& what) {
    return internal_error("kv: block " + str(b) + ": " + what);
  };
  std::vector<int32_t> refs((size_t)n, 0);
  std::vector<SeqId> named_by((size_t)n, 0);
  std::vector<uint8_t> named((size_t)n, 0);
  for (const auto& [id, seq] : seqs_) {
    if ((int32_t)seq.blocks.size() != blocks_for(seq.length))
      return internal_error("kv: sequence " + str(id) + " holds " + str((int64_t)seq.blocks.size()) +
                            " blocks for " + str(seq.length) + " tokens");
    for (int32_t b : seq.blocks) {
      if (b < 0 || b >= n) return internal_error("kv: sequence " + str(id) + " names block " + str(b) + ", outside [0, " + str(n) + ")");
      if (named[(size_t)b] != 0 && named_by[(size_t)b] == id) return broken(b, "named twice by sequence " + str(id));
      named[(size_t)b] = 1;
      named_by[(size_t)b] = id;
      ++refs[(size_t)b];
    }
  }
  int32_t cached = 0;
  for (int32_t b = 0; b < n; ++b) {
    if (refs[(size_t)b] != ref_counts_[(size_t)b])
      return broken(b, "ref count " + str(ref_counts_[(size_t)b]) + " but " + str(refs[(size_t)b]) + " tables name it");
    cached += cached_flags_[(size_t)b] != 0;
  }
  if (cached != cached_) return internal_error("kv: " + str(cached) + " blocks are cached but the count says " + str(cached_));

  enum : uint8_t { kHeld, kFree, kEvictable };
  std::vector<uint8_t> state((size_t)n, kHeld);
  std::vector<uint8_t> seen((size_t)n, 0);
  for (int32_t b : free_list_) {
    if (b < 0 || b >= n) return internal_error("kv: the free list holds block " + str(b) + ", outside [0, " + str(n) + ")");
    if (seen[(size_t)b] != 0) return broken(b, "in the free list twice");
    if (ref_counts_[(size_t)b] != 0) return broken(b, "in the free list with ref count " + str(ref_counts_[(size_t)b]));
    if (cached_flags_[(size_t)b] != 0) return broken(b, "in the free list but cached");
    seen[(size_t)b] = 1;
    state[(size_t)b] = kFree;
  }
  int32_t evictable = 0;
  for (int32_t b = lru_next_[(size_t)n], prev = n; b != n; prev = b, b = lru_next_[(size_t)b]) {
    if (b < 0 || b >= n) return internal_error("kv: the evictable order links to block " + str(b));
    if (lru_prev_[(size_t)b] != prev) return broken(b, "its evictable-order links disagree");
    if (seen[(size_t)b] != 0) return broken(b, "evictable and free, or evictable twice");
    if (ref_counts_[(size_t)b] != 0) return broken(b, "evictable with ref count " + str(ref_counts_[(size_t)b]));
    if (cached_flags_[(size_t)b] == 0) return broken(b, "evictable but not cached");
    seen[(size_t)b] = 1;
    state[(size_t)b] = kEvictable;
    ++evictable;
  }
  if (evictable != evictable_)
    return internal_error("kv: " + str(evictable) + " blocks are evictable but the count says " + str(evictable_));
  for (int32_t b = 0; b < n; ++b)
    if (ref_counts_[(size_t)b] == 0 && state[(size_t)b] == kHeld) return broken(b, "held by no sequence, yet neither free nor evictable");
  return Status::ok();
}

}  // namespace tessera
