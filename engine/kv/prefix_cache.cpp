#include "engine/kv/prefix_cache.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <string>

#include "core/hash.h"

namespace tessera {

PrefixCache::PrefixCache(BlockManager& blocks, uint64_t salt, KeyFn key_fn)
    : blocks_(blocks), salt_(salt), key_fn_(key_fn), block_size_(blocks.block_size()) {
  entries_.resize((size_t)blocks.num_blocks());
  blocks_.set_eviction_listener([this](int32_t block) { on_evicted(block); });
}

PrefixCache::~PrefixCache() {
  blocks_.set_eviction_listener({});
  for (const auto& [key, block] : by_key_) blocks_.uncache(block);
}

uint64_t PrefixCache::block_hash(uint64_t parent, std::span<const int32_t> tokens, uint64_t salt) {
  const std::array<uint64_t, 2> seed_words{parent, salt};
  const uint64_t seed = hash_bytes(std::as_bytes(std::span(seed_words)));
  return hash_bytes(std::as_bytes(tokens), seed);
}

int32_t PrefixCache::find(uint64_t key, uint64_t parent_id, std::span<const int32_t> tokens) const {
  const auto it = by_key_.find(key);
  if (it == by_key_.end()) return -1;
  const Entry& e = entries_[(size_t)it->second];
  if (e.parent_id != parent_id || !std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end())) return -1;
  return it->second;
}

int32_t PrefixCache::match(std::span<const int32_t> prompt, std::vector<int32_t>* blocks) {
  blocks->clear();
  ++stats_.queries;
  stats_.query_tokens += (int64_t)prompt.size();
  if (prompt.empty()) return 0;
  const size_t max_blocks = (prompt.size() - 1) / (size_t)block_size_;
  uint64_t key = kRootHash;
  uint64_t parent_id = 0;
  for (size_t i = 0; i < max_blocks; ++i) {
    const auto tokens = prompt.subspan(i * (size_t)block_size_, (size_t)block_size_);
    key = key_fn_(key, tokens, salt_);
    const int32_t block = find(key, parent_id, tokens);
    if (block < 0) break;
    blocks->push_back(block);
    parent_id = entries_[(size_t)block].id;
  }
  const int32_t hit = (int32_t)blocks->size() * block_size_;
  stats_.hit_tokens += hit;
  return hit;
}

Status PrefixCache::insert(SeqId id, std::span<const int32_t> tokens, int32_t computed_tokens) {
  if (!blocks_.has(id)) return not_found("kv: prefix cache insert: no sequence " + std::to_string(id));
  const int64_t limit = std::min<int64_t>((int64_t)tokens.size(), blocks_.length(id));
  if (computed_tokens < 0 || computed_tokens > limit)
    return invalid_argument("kv: prefix cache insert: sequence " + std::to_string(id) + ": computed_tokens " +
                            std::to_string(computed_tokens) + " is outside [0, " + std::to_string(limit) +
                            "] (its tokens and its reserved length)");
  Progress& p = progress_[id];
  const uint64_t generation = blocks_.generation(id);
  if (p.generation != generation) p = Progress{.generation = generation};
  if (!p.certified) return Status::ok();

  const auto table = blocks_.block_table(id);
  const int32_t full_blocks = computed_tokens / block_size_;
  for (; p.blocks < full_blocks; ++p.blocks) {
    const auto block_tokens = tokens.subspan((size_t)p.blocks * (size_t)block_size_, (size_t)block_size_);
    const uint64_t key = key_fn_(p.key, block_tokens, salt_);
    const auto found = by_key_.find(key);
    if (found == by_key_.end()) {
      const int32_t block = table[(size_t)p.blocks];
      // Cached under another key: the block does not hold what these tokens
      // say; registering nothing more of this sequence is the safe answer.
      if (blocks_.is_cached(block)) {
        p.certified = false;
        break;
      }
      TS_TRY(blocks_.mark_cached(block));
      Entry& e = entries_[(size_t)block];
      e.key = key;
      e.id = next_entry_id_++;
      e.parent_id = p.entry_id;
      e.tokens.assign(block_tokens.begin(), block_tokens.end());
      by_key_.emplace(key, block);
      p.entry_id = e.id;
    } else {
      const Entry& e = entries_[(size_t)found->second];
      // The same tokens after the same certified prefix: this block, or a
      // duplicate of it that stays uncached. Anything else under this key (a
      // 64-bit collision, or an entry whose parent was evicted and cached
      // again since) cannot certify this sequence's prefix: stop there.
      if (e.parent_id != p.entry_id ||
          !std::equal(e.tokens.begin(), e.tokens.end(), block_tokens.begin(), block_tokens.end())) {
        p.certified = false;
        break;
      }
      p.entry_id = e.id;
    }
    p.key = key;
  }
  return Status::ok();
}

void PrefixCache::forget(SeqId id) { progress_.erase(id); }

void PrefixCache::on_evicted(int32_t block) {
  const auto it = by_key_.find(entries_[(size_t)block].key);
  assert(it != by_key_.end() && it->second == block);
  by_key_.erase(it);
  ++stats_.evictions;
}

Status PrefixCache::check_invariants() const {
  for (const auto& [key, block] : by_key_) {
    const std::string where = "kv: prefix cache entry for block " + std::to_string(block);
    if (block < 0 || block >= blocks_.num_blocks()) return internal_error(where + ": no such block");
    if (!blocks_.is_cached(block)) return internal_error(where + ": the block is not marked cached");
    const Entry& e = entries_[(size_t)block];
    if (e.key != key) return internal_error(where + ": filed under another key than its own");
    if ((int32_t)e.tokens.size() != block_size_) return internal_error(where + ": holds " + std::to_string(e.tokens.size()) + " tokens");
  }
  if (cached_blocks() != blocks_.cached_blocks())
    return internal_error("kv: prefix cache holds " + std::to_string(cached_blocks()) + " entries but " +
                          std::to_string(blocks_.cached_blocks()) + " blocks are marked cached");
  return Status::ok();
}

}  // namespace tessera
