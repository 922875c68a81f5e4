// The prefix cache against what its contract says by hand, and a randomized
// run against a model of the pools: every block remembers the token prefix
// its slots were computed from, so a block the cache hands out is checked
// against the prompt that asked for it, whatever the cache believes.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/kv/prefix_cache.h"
#include "support/block_accounting.h"
#include "support/random.h"

using tessera::BlockCopy;
using tessera::BlockManager;
using tessera::PrefixCache;
using tessera::SeqId;
using tessera::StatusCode;
using tessera::testing::require_block_accounting;

namespace {

using Tokens = std::vector<int32_t>;

Tokens random_tokens(tessera::testing::Rng& rng, size_t n, int32_t alphabet = 1000) {
  Tokens t(n);
  for (auto& x : t) x = rng.integer(0, alphabet - 1);
  return t;
}

Tokens table_of(const BlockManager& bm, SeqId id) { return Tokens(bm.block_table(id).begin(), bm.block_table(id).end()); }

// What a scheduler does at admission: reuse the cached prefix, reserve the
// rest, and (the prompt computed) register its full blocks.
void admit(BlockManager& bm, PrefixCache& cache, SeqId id, const Tokens& prompt) {
  std::vector<int32_t> blocks;
  cache.match(prompt, &blocks);
  REQUIRE(bm.add_sequence(id, blocks).is_ok());
  std::vector<BlockCopy> copies;
  REQUIRE(bm.reserve(id, (int32_t)prompt.size(), &copies).is_ok());
  REQUIRE(copies.empty());  // adopted blocks are full
  REQUIRE(cache.insert(id, prompt, (int32_t)prompt.size()).is_ok());
}

}  // namespace

TEST_CASE("prompts that share a prefix share its blocks, and a change in block k keeps only the blocks before k") {
  tessera::testing::Rng rng(401);
  BlockManager bm({.num_blocks = 32, .block_size = 4});
  PrefixCache cache(bm, 7);
  const Tokens a = random_tokens(rng, 17);  // 4 full blocks and one token
  std::vector<int32_t> blocks;
  CHECK(cache.match(a, &blocks) == 0);
  CHECK(blocks.empty());
  admit(bm, cache, 1, a);
  CHECK(cache.cached_blocks() == 4);
  const Tokens a_table = table_of(bm, 1);

  CHECK(cache.match(a, &blocks) == 16);
  CHECK(blocks == Tokens(a_table.begin(), a_table.begin() + 4));
  for (int32_t k = 0; k < 4; ++k) {
    Tokens b = a;
    b[(size_t)(k * 4 + rng.integer(0, 3))] += 1;
    CHECK(cache.match(b, &blocks) == k * 4);
    CHECK(blocks == Tokens(a_table.begin(), a_table.begin() + k));
  }
  // The last token is in no full block: changing it changes nothing.
  Tokens tail = a;
  tail.back() += 1;
  CHECK(cache.match(tail, &blocks) == 16);
  // Longer prompts reuse the same four.
  Tokens longer = a;
  longer.insert(longer.end(), {1, 2, 3, 4, 5});
  CHECK(cache.match(longer, &blocks) == 16);

  const tessera::PrefixCacheStats& st = cache.stats();
  CHECK(st.queries == 9);  // admit's and the eight above
  CHECK(st.query_tokens == 17 * 8 + 22);
  CHECK(st.hit_tokens == 16 + (0 + 4 + 8 + 12) + 16 + 16);
  CHECK(st.evictions == 0);
  REQUIRE(cache.check_invariants().is_ok());
}

TEST_CASE("a block's key chains its parent's key and the salt: another model's key for the same tokens differs") {
  const Tokens t{1, 2, 3, 4};
  const uint64_t root = PrefixCache::kRootHash;
  CHECK(PrefixCache::block_hash(root, t, 1) != PrefixCache::block_hash(root, t, 2));
  const uint64_t k1 = PrefixCache::block_hash(root, t, 1);
  CHECK(PrefixCache::block_hash(k1, t, 1) != k1);
  CHECK(PrefixCache::block_hash(k1, t, 1) == PrefixCache::block_hash(k1, Tokens{1, 2, 3, 4}, 1));
  CHECK(PrefixCache::block_hash(root, Tokens{1, 2, 3, 5}, 1) != k1);
  // Tokens are hashed as whole ids, not bytes that could shift between them.
  CHECK(PrefixCache::block_hash(root, Tokens{256, 0}, 1) != PrefixCache::block_hash(root, Tokens{1, 0}, 1));
}

TEST_CASE("a match always leaves the last prompt token to compute") {
  tessera::testing::Rng rng(402);
  BlockManager bm({.num_blocks = 16, .block_size = 4});
  PrefixCache cache(bm, 1);
  const Tokens a = random_tokens(rng, 13);
  admit(bm, cache, 1, a);  // 3 full blocks cached
  std::vector<int32_t> blocks;
  CHECK(cache.match(Tokens(a.begin(), a.begin() + 8), &blocks) == 4);  // exactly 2 full blocks: only 1
  CHECK(cache.match(Tokens(a.begin(), a.begin() + 9), &blocks) == 8);
  CHECK(cache.match(Tokens(a.begin(), a.begin() + 12), &blocks) == 8);
  CHECK(cache.match(Tokens(a.begin(), a.begin() + 13), &blocks) == 12);
  CHECK(cache.match(Tokens(a.begin(), a.begin() + 1), &blocks) == 0);
  CHECK(cache.match(Tokens{}, &blocks) == 0);
  CHECK(blocks.empty());
}

TEST_CASE("an evicted block's entry goes: a later match stops before it, and the eviction is counted") {
  tessera::testing::Rng rng(403);
  BlockManager bm({.num_blocks = 4, .block_size = 4});
  PrefixCache cache(bm, 1);
  const Tokens a = random_tokens(rng, 9);
  admit(bm, cache, 1, a);  // blocks 0, 1 cached, 2 holds the last token
  bm.release(1);
  cache.forget(1);
  CHECK(bm.evictable_blocks() == 2);
  CHECK(bm.free_blocks() == 2);
  std::vector<int32_t> blocks;
  CHECK(cache.match(a, &blocks) == 8);

  // Three blocks for an unrelated prompt: the two free ones, then the tail of a.
  admit(bm, cache, 2, random_tokens(rng, 11));
  CHECK(cache.stats().evictions == 1);
  CHECK(table_of(bm, 2) == Tokens{2, 3, 1});
  CHECK(cache.match(a, &blocks) == 4);
  CHECK(blocks == Tokens{0});
  CHECK(bm.is_cached(0));
  CHECK_FALSE(bm.is_cached(1));  // now 2's partial last block
  REQUIRE(cache.check_invariants().is_ok());
  require_block_accounting(bm, {2});
}

TEST_CASE("a sequence adopted from the cache grows into fresh blocks and registers only those") {
  tessera::testing::Rng rng(404);
  BlockManager bm({.num_blocks = 32, .block_size = 4});
  PrefixCache cache(bm, 1);
  Tokens a = random_tokens(rng, 10);
  admit(bm, cache, 1, a);  // 2 cached
  Tokens b(a.begin(), a.begin() + 9);
  admit(bm, cache, 2, b);  // adopts 2, computes token 8 into a fresh block
  CHECK(table_of(bm, 2)[0] == table_of(bm, 1)[0]);
  CHECK(table_of(bm, 2)[1] == table_of(bm, 1)[1]);
  CHECK(table_of(bm, 2)[2] != table_of(bm, 1)[2]);
  CHECK(cache.cached_blocks() == 2);

  // Decode one token at a time: a block is registered once it is full and computed.
  for (int32_t step = 0; step < 11; ++step) {
    b.push_back(rng.integer(0, 999));
    std::vector<BlockCopy> copies;
    REQUIRE(bm.reserve(2, (int32_t)b.size(), &copies).is_ok());
    CHECK(copies.empty());
    REQUIRE(cache.insert(2, b, (int32_t)b.size() - 1).is_ok());  // the newest token not yet computed
    CHECK(cache.cached_blocks() == 2 + ((int32_t)b.size() - 1) / 4 - 2);
    REQUIRE(cache.check_invariants().is_ok());
  }
  std::vector<int32_t> blocks;
  b.push_back(0);
  CHECK(cache.match(b, &blocks) == ((int32_t)b.size() - 2) / 4 * 4);
  const Tokens table = table_of(bm, 2);
  CHECK(blocks == Tokens(table.begin(), table.begin() + (ptrdiff_t)blocks.size()));
}

TEST_CASE("the same content computed twice is cached once, and the second sequence's later blocks chain on it") {
  tessera::testing::Rng rng(405);
  BlockManager bm({.num_blocks = 32, .block_size = 4});
  PrefixCache cache(bm, 1);
  const Tokens p = random_tokens(rng, 9);
  // Both admitted before either is computed: neither finds anything.
  std::vector<int32_t> blocks;
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.add_sequence(2).is_ok());
  REQUIRE(bm.reserve(1, 9).is_ok());
  REQUIRE(bm.reserve(2, 9).is_ok());
  REQUIRE(cache.insert(1, p, 9).is_ok());
  REQUIRE(cache.insert(2, p, 9).is_ok());
  CHECK(cache.cached_blocks() == 2);
  CHECK_FALSE(bm.is_cached(table_of(bm, 2)[0]));

  Tokens longer = p;
  longer.insert(longer.end(), {7, 7, 7, 8});
  REQUIRE(bm.reserve(2, (int32_t)longer.size()).is_ok());
  REQUIRE(cache.insert(2, longer, (int32_t)longer.size()).is_ok());
  CHECK(cache.cached_blocks() == 3);
  longer.push_back(1);
  CHECK(cache.match(longer, &blocks) == 12);
  CHECK(blocks == Tokens{table_of(bm, 1)[0], table_of(bm, 1)[1], table_of(bm, 2)[2]});

  bm.release(1);
  bm.release(2);
  require_block_accounting(bm, {});
  CHECK(bm.evictable_blocks() == 3);
  CHECK(bm.free_blocks() == 29);
}

TEST_CASE("after a truncate, insert walks the sequence again: the old and the new continuation are both found") {
  tessera::testing::Rng rng(406);
  BlockManager bm({.num_blocks = 16, .block_size = 4});
  PrefixCache cache(bm, 1);
  const Tokens t = random_tokens(rng, 12);
  admit(bm, cache, 1, t);
  CHECK(cache.cached_blocks() == 3);
  const Tokens old_table = table_of(bm, 1);

  // Roll back to 5 tokens and continue differently: block 1 is cached, so it is copied.
  REQUIRE(bm.truncate(1, 5).is_ok());
  Tokens u(t.begin(), t.begin() + 5);
  for (int i = 0; i < 7; ++i) u.push_back(1000 + i);
  std::vector<BlockCopy> copies;
  REQUIRE(bm.reserve(1, 12, &copies).is_ok());
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].src == old_table[1]);
  REQUIRE(cache.insert(1, u, 12).is_ok());
  CHECK(cache.cached_blocks() == 5);
  REQUIRE(cache.check_invariants().is_ok());

  std::vector<int32_t> blocks;
  Tokens t_more = t, u_more = u;
  t_more.push_back(0);
  u_more.push_back(0);
  CHECK(cache.match(t_more, &blocks) == 12);
  CHECK(blocks == old_table);
  CHECK(cache.match(u_more, &blocks) == 12);
  CHECK(blocks == table_of(bm, 1));
  CHECK(blocks[0] == old_table[0]);
  CHECK(blocks[1] != old_table[1]);
}

TEST_CASE("colliding keys never hand out a block of other tokens") {
  // Every block gets the same key.
  const PrefixCache::KeyFn constant = [](uint64_t, std::span<const int32_t>, uint64_t) -> uint64_t { return 42; };
  tessera::testing::Rng rng(407);
  BlockManager bm({.num_blocks = 16, .block_size = 4});
  PrefixCache cache(bm, 1, constant);
  const Tokens a = random_tokens(rng, 13);
  admit(bm, cache, 1, a);
  CHECK(cache.cached_blocks() == 1);  // block 1's key is taken by block 0

  std::vector<int32_t> blocks;
  CHECK(cache.match(a, &blocks) == 4);
  Tokens b = a;
  b[0] += 1;
  CHECK(cache.match(b, &blocks) == 0);
  // Block 1 holding block 0's tokens: same key, same tokens, but not after block 0.
  Tokens c = a;
  std::copy(a.begin(), a.begin() + 4, c.begin() + 4);
  CHECK(cache.match(c, &blocks) == 4);
  Tokens d(a.begin(), a.begin() + 4);
  d.insert(d.end(), a.begin(), a.end());
  CHECK(cache.match(d, &blocks) == 4);
}

TEST_CASE("insert refuses an unknown sequence and a computed count past its tokens or its length") {
  BlockManager bm({.num_blocks = 4, .block_size = 4});
  PrefixCache cache(bm, 1);
  const Tokens t{1, 2, 3, 4, 5, 6};
  CHECK(cache.insert(1, t, 4).code() == StatusCode::not_found);
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 5).is_ok());
  CHECK(cache.insert(1, t, 6).code() == StatusCode::invalid_argument);  // past the length
  CHECK(cache.insert(1, Tokens{1, 2}, 3).code() == StatusCode::invalid_argument);
  CHECK(cache.insert(1, t, -1).code() == StatusCode::invalid_argument);
  CHECK(cache.cached_blocks() == 0);
  REQUIRE(cache.insert(1, t, 5).is_ok());
  CHECK(cache.cached_blocks() == 1);
}

TEST_CASE("a prefix cache that goes away leaves no block cached") {
  tessera::testing::Rng rng(408);
  BlockManager bm({.num_blocks = 8, .block_size = 4});
  {
    PrefixCache cache(bm, 1);
    admit(bm, cache, 1, random_tokens(rng, 13));
    admit(bm, cache, 2, random_tokens(rng, 13));
    bm.release(1);
  }
  CHECK(bm.cached_blocks() == 0);
  CHECK(bm.evictable_blocks() == 0);
  CHECK(bm.free_blocks() == 4);
  require_block_accounting(bm, {2});
  // No listener is left behind: allocations work on.
  REQUIRE(bm.add_sequence(3).is_ok());
  REQUIRE(bm.reserve(3, 16).is_ok());
}

namespace {

// A serving loop in miniature over a small pool, with a model of the pools:
// content[b] is the token prefix the KV in block b was computed from, up to
// its last written slot. Writes are checked to go only to blocks their
// sequence holds alone and that are not cached, onto slots computed from the
// same prefix; blocks the cache hands out are checked to hold exactly the
// prompt's prefix at their position.
struct Serving {
  static constexpr int32_t kBlockSize = 4;
  BlockManager bm{{.num_blocks = 40, .block_size = kBlockSize}};
  PrefixCache cache;
  std::map<SeqId, Tokens> seqs;  // live sequences and their tokens (all computed)
  std::vector<Tokens> content = std::vector<Tokens>(40);
  std::set<SeqId> live;
  SeqId next = 1;
  int64_t matches = 0, hit_tokens = 0, evictions = 0;

  explicit Serving(PrefixCache::KeyFn key) : cache(bm, 0x5eed, key) {}

  // Reserves the sequence's tokens and writes the new ones; false when it does not fit.
  bool grow(SeqId id) {
    const Tokens& tokens = seqs[id];
    const int32_t from = bm.length(id), to = (int32_t)tokens.size();
    const std::vector<int32_t> before = table_of(bm, id);
    const int32_t needed = bm.blocks_needed(id, to);
    const int32_t free_before = bm.free_blocks(), available = bm.available_blocks(), cached_before = bm.cached_blocks();
    std::vector<BlockCopy> copies;
    const tessera::Status s = bm.reserve(id, to, &copies);
    REQUIRE(s.is_ok() == (needed <= available));
    if (!s.is_ok()) {
      REQUIRE(s.code() == StatusCode::resource_exhausted);
      REQUIRE(table_of(bm, id) == before);
      return false;
    }
    // Free blocks go first; cached ones are evicted only for the rest.
    const int32_t evicted = cached_before - bm.cached_blocks();
    REQUIRE(evicted == std::max(0, needed - free_before));
    evictions += evicted;
    for (const BlockCopy& c : copies) content[(size_t)c.dst] = content[(size_t)c.src];
    const auto table = bm.block_table(id);
    for (int32_t p = from; p < to; ++p) {
      const int32_t b = table[(size_t)(p / kBlockSize)];
      REQUIRE(bm.ref_count(b) == 1);
      REQUIRE_FALSE(bm.is_cached(b));
      if (p % kBlockSize != 0) {
        REQUIRE(content[(size_t)b].size() >= (size_t)p);
        REQUIRE(std::equal(tokens.begin(), tokens.begin() + p, content[(size_t)b].begin()));
      }
      content[(size_t)b].assign(tokens.begin(), tokens.begin() + p + 1);
    }
    return true;
  }

  void admit(const Tokens& prompt) {
    std::vector<int32_t> blocks;
    const int32_t hit = cache.match(prompt, &blocks);
    ++matches;
    hit_tokens += hit;
    REQUIRE(hit == (int32_t)blocks.size() * kBlockSize);
    REQUIRE(hit <= (int32_t)prompt.size() - 1);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const Tokens& c = content[(size_t)blocks[i]];
      REQUIRE(c.size() == (i + 1) * kBlockSize);
      REQUIRE(std::equal(c.begin(), c.end(), prompt.begin()));
    }
    const SeqId id = next++;
    REQUIRE(bm.add_sequence(id, blocks).is_ok());
    seqs[id] = prompt;
    if (!grow(id)) {
      bm.release(id);
      seqs.erase(id);
      return;
    }
    live.insert(id);
    REQUIRE(cache.insert(id, prompt, (int32_t)prompt.size()).is_ok());
  }

  void end(SeqId id) {
    bm.release(id);
    cache.forget(id);
    seqs.erase(id);
    live.erase(id);
  }

  void check() {
    require_block_accounting(bm, live);
    const tessera::Status s = cache.check_invariants();
    INFO(s.message());
    REQUIRE(s.is_ok());
  }
};

void run_serving(Serving& sv, tessera::testing::Rng& rng, int steps) {
  // A few shared beginnings, cut at random points, so that prompts collide.
  std::vector<Tokens> stems;
  for (int i = 0; i < 4; ++i) stems.push_back(random_tokens(rng, 24, 3));
  for (int step = 0; step < steps; ++step) {
    const int op = rng.integer(0, 9);
    if (sv.live.empty() || op <= 2) {
      Tokens prompt;
      if (rng.integer(0, 3) != 0) {
        const Tokens& stem = stems[(size_t)rng.integer(0, 3)];
        prompt.assign(stem.begin(), stem.begin() + rng.integer(0, 24));
      }
      const Tokens tail = random_tokens(rng, (size_t)rng.integer(prompt.empty() ? 1 : 0, 8), 3);
      prompt.insert(prompt.end(), tail.begin(), tail.end());
      sv.admit(prompt);
    } else {
      auto it = sv.live.begin();
      std::advance(it, rng.integer(0, (int32_t)sv.live.size() - 1));
      const SeqId id = *it;
      Tokens& tokens = sv.seqs[id];
      if (op <= 5) {  // decode or a chunk, then register what is computed (sometimes less)
        if (tokens.size() > 48) {
          sv.end(id);
        } else {
          const size_t before = tokens.size();
          const Tokens more = random_tokens(rng, (size_t)rng.integer(1, 6), 3);
          tokens.insert(tokens.end(), more.begin(), more.end());
          if (!sv.grow(id)) {
            tokens.resize(before);
          } else {
            const int32_t computed = rng.integer(0, 3) == 0 ? rng.integer(0, (int32_t)tokens.size()) : (int32_t)tokens.size();
            REQUIRE(sv.cache.insert(id, tokens, computed).is_ok());
          }
        }
      } else if (op == 6) {  // parallel sampling
        const SeqId child = sv.next++;
        REQUIRE(sv.bm.fork(id, child).is_ok());
        sv.seqs[child] = tokens;
        sv.live.insert(child);
      } else if (op == 7) {  // speculative rollback
        const int32_t keep = rng.integer(0, (int32_t)tokens.size());
        REQUIRE(sv.bm.truncate(id, keep).is_ok());
        tokens.resize((size_t)keep);
      } else {
        sv.end(id);
      }
    }
    sv.check();
  }
  while (!sv.live.empty()) sv.end(*sv.live.begin());
  sv.check();
  // Nothing leaked: every block is free or evictable, and the evictable ones are the cache's.
  CHECK(sv.bm.free_blocks() + sv.bm.evictable_blocks() == sv.bm.num_blocks());
  CHECK(sv.bm.evictable_blocks() == sv.cache.cached_blocks());
  CHECK(sv.bm.cached_blocks() == sv.cache.cached_blocks());
  CHECK(sv.cache.stats().queries == sv.matches);
  CHECK(sv.cache.stats().hit_tokens == sv.hit_tokens);
  CHECK(sv.cache.stats().evictions == sv.evictions);
  MESSAGE("prefix cache: " << sv.matches << " admissions, " << sv.hit_tokens << " of "
                           << sv.cache.stats().query_tokens << " prompt tokens reused, " << sv.evictions << " evictions");
}

}  // namespace

TEST_CASE("random admissions, decode, forks, rollbacks and releases keep the block accounting and reuse only matching blocks") {
  tessera::testing::Rng rng(409);
  Serving sv(&PrefixCache::block_hash);
  run_serving(sv, rng, 20000);
  CHECK(sv.hit_tokens > 0);
  CHECK(sv.evictions > 0);
}

TEST_CASE("the same random serving with a key that collides often still reuses only matching blocks") {
  // Two bits of key: most distinct blocks collide.
  const PrefixCache::KeyFn weak = [](uint64_t parent, std::span<const int32_t> tokens, uint64_t) -> uint64_t {
    return (parent + (uint64_t)tokens[0] + (uint64_t)tokens.back()) % 4;
  };
  tessera::testing::Rng rng(410);
  Serving sv(weak);
  run_serving(sv, rng, 20000);
}
