// The KV block manager against an oracle rebuilt from the outside: ref counts
// recounted from every live block table, slots recomputed from the table,
// eviction order and copy-on-write of cached blocks worked out by hand.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "engine/kv/block_manager.h"
#include "support/block_accounting.h"
#include "support/random.h"

using tessera::BlockCopy;
using tessera::BlockManager;
using tessera::SeqId;
using tessera::StatusCode;
using tessera::testing::require_block_accounting;


TEST_CASE("random allocate, grow, fork and release cycles never leak a block") {
  tessera::testing::Rng rng(201);
  BlockManager bm({.num_blocks = 64, .block_size = 16});
  std::set<SeqId> live;
  SeqId next_id = 0;
  for (int step = 0; step < 3000; ++step) {
    const int op = rng.integer(0, 9);
    if (op <= 2 || live.empty()) {
      const SeqId id = next_id++;
      REQUIRE(bm.add_sequence(id).is_ok());
      live.insert(id);
      const tessera::Status s = bm.reserve(id, rng.integer(0, 200));
      REQUIRE((s.is_ok() || s.code() == StatusCode::resource_exhausted));
    } else {
      auto it = live.begin();
      std::advance(it, rng.integer(0, (int32_t)live.size() - 1));
      const SeqId id = *it;
      if (op <= 5) {
        std::vector<BlockCopy> copies;
        const int32_t before = bm.length(id);
        const tessera::Status s = bm.reserve(id, before + rng.integer(1, 40), &copies);
        REQUIRE((s.is_ok() || s.code() == StatusCode::resource_exhausted));
        REQUIRE(copies.size() <= 1);
        if (!s.is_ok()) REQUIRE(bm.length(id) == before);
      } else if (op == 6) {
        const SeqId child = next_id++;
        REQUIRE(bm.fork(id, child).is_ok());
        live.insert(child);
      } else {
        bm.release(id);
        live.erase(id);
      }
    }
    require_block_accounting(bm, live);
  }
  for (SeqId id : live) bm.release(id);
  CHECK(bm.num_sequences() == 0);
  CHECK(bm.free_blocks() == bm.num_blocks());
}

TEST_CASE("a reserve that does not fit returns resource_exhausted and changes nothing") {
  BlockManager bm({.num_blocks = 5, .block_size = 16});
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.add_sequence(2).is_ok());
  REQUIRE(bm.reserve(1, 40).is_ok());  // 3 blocks
  const std::vector<int32_t> table1(bm.block_table(1).begin(), bm.block_table(1).end());

  const tessera::Status s = bm.reserve(2, 3 * 16 + 1);  // 4 blocks, 2 free
  CHECK(s.code() == StatusCode::resource_exhausted);
  CHECK(s.message().find("sequence 2") != std::string::npos);
  CHECK(bm.free_blocks() == 2);
  CHECK(bm.length(2) == 0);
  CHECK(bm.block_table(2).empty());
  CHECK(std::vector<int32_t>(bm.block_table(1).begin(), bm.block_table(1).end()) == table1);

  CHECK(bm.reserve(2, 32).is_ok());  // exactly the rest
  CHECK(bm.free_blocks() == 0);
  CHECK(bm.reserve(1, 48).is_ok());   // fits in its third block
  CHECK(bm.reserve(1, 49).code() == StatusCode::resource_exhausted);
  CHECK(bm.length(1) == 48);
}

TEST_CASE("slots map positions through the block table across block boundaries") {
  tessera::testing::Rng rng(203);
  for (int32_t block_size : {1, 3, 16, 32}) {
    BlockManager bm({.num_blocks = 512, .block_size = block_size});
    std::set<int32_t> used;
    for (SeqId id = 0; id < 6; ++id) {
      REQUIRE(bm.add_sequence(id).is_ok());
      // Grow in uneven steps so that tables interleave blocks of different sequences.
      for (int32_t len = rng.integer(1, 7); len <= 60; len += rng.integer(1, 9)) REQUIRE(bm.reserve(id, len).is_ok());
    }
    for (SeqId id = 0; id < 6; ++id) {
      const auto table = bm.block_table(id);
      for (int32_t pos = 0; pos < bm.length(id); ++pos) {
        const int32_t expected = table[(size_t)(pos / block_size)] * block_size + pos % block_size;
        REQUIRE(bm.slot(id, pos) == expected);
        REQUIRE(used.insert(expected).second);  // no two tokens share a slot
      }
      CHECK(bm.slot(id, bm.length(id)) == -1);
      CHECK(bm.slot(id, -1) == -1);
    }
    CHECK(bm.slot(99, 0) == -1);
  }
}

TEST_CASE("fork then reserve copies the shared, partially filled last block exactly once") {
  BlockManager bm({.num_blocks = 16, .block_size = 16});
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 20).is_ok());  // blocks: full + 4 of 16
  REQUIRE(bm.fork(1, 2).is_ok());
  const std::vector<int32_t> parent(bm.block_table(1).begin(), bm.block_table(1).end());
  CHECK(std::vector<int32_t>(bm.block_table(2).begin(), bm.block_table(2).end()) == parent);
  CHECK(bm.length(2) == 20);
  CHECK(bm.ref_count(parent[0]) == 2);
  CHECK(bm.ref_count(parent[1]) == 2);
  CHECK(bm.free_blocks() == 14);

  // A copy is needed, so a null copy list is refused without changes.
  CHECK(bm.reserve(2, 21).code() == StatusCode::invalid_argument);
  CHECK(bm.free_blocks() == 14);
  CHECK(bm.length(2) == 20);

  std::vector<BlockCopy> copies;
  REQUIRE(bm.reserve(2, 21, &copies).is_ok());
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].src == parent[1]);
  const auto child = bm.block_table(2);
  CHECK(child[0] == parent[0]);  // the full block stays shared
  CHECK(copies[0].dst == child[1]);
  CHECK(child[1] != parent[1]);
  CHECK(bm.ref_count(parent[1]) == 1);
  CHECK(bm.ref_count(child[1]) == 1);
  CHECK(bm.ref_count(parent[0]) == 2);

  // The parent now owns its last block alone: no second copy, for either.
  copies.clear();
  REQUIRE(bm.reserve(1, 25, &copies).is_ok());
  REQUIRE(bm.reserve(2, 40, &copies).is_ok());
  CHECK(copies.empty());
  CHECK(bm.block_table(1)[1] == parent[1]);

  bm.release(1);
  bm.release(2);
  CHECK(bm.free_blocks() == 16);
}

TEST_CASE("a fork at a block boundary shares every block and copies nothing") {
  BlockManager bm({.num_blocks = 8, .block_size = 16});
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 32).is_ok());
  REQUIRE(bm.fork(1, 2).is_ok());
  std::vector<BlockCopy> copies;
  REQUIRE(bm.reserve(2, 33, &copies).is_ok());
  REQUIRE(bm.reserve(1, 33, &copies).is_ok());
  CHECK(copies.empty());
  CHECK(bm.block_table(1)[1] == bm.block_table(2)[1]);
  CHECK(bm.block_table(1)[2] != bm.block_table(2)[2]);
  CHECK(bm.free_blocks() == 4);
}

TEST_CASE("releasing twice, or an unknown id, is harmless") {
  BlockManager bm({.num_blocks = 4, .block_size = 16});
  REQUIRE(bm.add_sequence(7).is_ok());
  REQUIRE(bm.reserve(7, 33).is_ok());
  REQUIRE(bm.fork(7, 8).is_ok());
  bm.release(7);
  bm.release(7);
  bm.release(12345);
  CHECK(bm.free_blocks() == 1);  // 8 still holds three blocks
  CHECK(bm.length(8) == 33);
  bm.release(8);
  bm.release(8);
  CHECK(bm.free_blocks() == 4);
  CHECK_FALSE(bm.has(7));
  CHECK(bm.block_table(7).empty());
  CHECK(bm.length(7) == 0);
}

TEST_CASE("misuse is reported, not crashed on") {
  BlockManager bm({.num_blocks = 4, .block_size = 16});
  REQUIRE(bm.add_sequence(1).is_ok());
  CHECK(bm.add_sequence(1).code() == StatusCode::invalid_argument);
  CHECK(bm.reserve(2, 10).code() == StatusCode::not_found);
  CHECK(bm.reserve(1, -1).code() == StatusCode::invalid_argument);
  CHECK(bm.fork(2, 3).code() == StatusCode::not_found);
  CHECK(bm.fork(1, 1).code() == StatusCode::invalid_argument);
  CHECK(bm.reserve(1, 20).is_ok());
  CHECK(bm.reserve(1, 5).is_ok());  // never shrinks
  CHECK(bm.length(1) == 20);
  CHECK(bm.num_sequences() == 1);
}

TEST_CASE("blocks_for rounds up to whole blocks") {
  BlockManager bm({.num_blocks = 1, .block_size = 16});
  CHECK(bm.blocks_for(0) == 0);
  CHECK(bm.blocks_for(1) == 1);
  CHECK(bm.blocks_for(16) == 1);
  CHECK(bm.blocks_for(17) == 2);
  CHECK(bm.blocks_for(2147483647) == 134217728);
  CHECK(bm.block_size() == 16);
  CHECK(bm.num_blocks() == 1);
}

TEST_CASE("truncate drops the blocks past the kept tokens, keeps shared ones for the others, and refuses bad counts") {
  BlockManager bm({.num_blocks = 8, .block_size = 4});
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 14).is_ok());  // blocks 0..3
  REQUIRE(bm.fork(1, 2).is_ok());
  REQUIRE(bm.truncate(2, 5).is_ok());  // keeps blocks 0 and 1, both still shared with 1
  CHECK(bm.length(2) == 5);
  CHECK(bm.block_table(2).size() == 2);
  CHECK(bm.free_blocks() == 4);        // 2 and 3 are still held by sequence 1
  CHECK(bm.ref_count(1) == 2);
  CHECK(bm.slot(2, 4) == bm.slot(1, 4));
  CHECK(bm.slot(2, 5) == -1);
  // Writing past the kept tokens lands in the shared block 1: copy-on-write.
  std::vector<BlockCopy> copies;
  REQUIRE(bm.reserve(2, 7, &copies).is_ok());
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].src == bm.block_table(1)[1]);
  CHECK(bm.ref_count(copies[0].src) == 1);
  require_block_accounting(bm, {1, 2});
  // Truncating the sole holder frees its blocks; to 0 keeps the sequence, empty.
  REQUIRE(bm.truncate(1, 0).is_ok());
  CHECK(bm.block_table(1).empty());
  require_block_accounting(bm, {1, 2});
  CHECK(bm.truncate(2, 8).code() == StatusCode::invalid_argument);
  CHECK(bm.truncate(2, -1).code() == StatusCode::invalid_argument);
  CHECK(bm.truncate(99, 0).code() == StatusCode::not_found);
  require_block_accounting(bm, {1, 2});
}

TEST_CASE("random reserve, fork, truncate and release keep every ref count equal to the tables that hold it") {
  tessera::testing::Rng rng(202);
  BlockManager bm({.num_blocks = 40, .block_size = 8});
  std::set<SeqId> live;
  SeqId next = 0;
  for (int step = 0; step < 2000; ++step) {
    const int op = rng.integer(0, 7);
    if (live.empty() || op == 0) {
      REQUIRE(bm.add_sequence(next).is_ok());
      live.insert(next++);
      continue;
    }
    auto it = live.begin();
    std::advance(it, rng.integer(0, (int32_t)live.size() - 1));
    const SeqId id = *it;
    std::vector<BlockCopy> copies;
    if (op <= 3) {
      // blocks_needed is the count of blocks the table gains, and reserve fails exactly when it exceeds what is available.
      const std::vector<int32_t> before(bm.block_table(id).begin(), bm.block_table(id).end());
      const int32_t total = bm.length(id) + rng.integer(0, 20);
      const int32_t needed = bm.blocks_needed(id, total);
      const int32_t available = bm.available_blocks();
      const tessera::Status s = bm.reserve(id, total, &copies);
      REQUIRE(s.is_ok() == (needed <= available));
      if (s.is_ok()) {
        const std::set<int32_t> old_blocks(before.begin(), before.end());
        int32_t gained = 0;
        for (int32_t b : bm.block_table(id)) gained += old_blocks.count(b) == 0;
        REQUIRE(gained == needed);
      } else {
        REQUIRE(s.code() == StatusCode::resource_exhausted);
      }
    } else if (op == 4) {
      REQUIRE(bm.fork(id, next).is_ok());
      live.insert(next++);
    } else if (op == 5) {
      REQUIRE(bm.truncate(id, rng.integer(0, bm.length(id))).is_ok());
    } else {
      bm.release(id);
      live.erase(id);
    }
    require_block_accounting(bm, live);
  }
}

namespace {

std::vector<int32_t> table_of(const BlockManager& bm, SeqId id) {
  return std::vector<int32_t>(bm.block_table(id).begin(), bm.block_table(id).end());
}

}  // namespace

TEST_CASE("cached blocks nobody holds are kept evictable and taken, least recently released first, only when none is free") {
  BlockManager bm({.num_blocks = 6, .block_size = 4});
  std::vector<int32_t> evicted;
  bm.set_eviction_listener([&](int32_t b) { evicted.push_back(b); });
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.add_sequence(2).is_ok());
  REQUIRE(bm.reserve(1, 8).is_ok());
  REQUIRE(bm.reserve(2, 8).is_ok());
  CHECK(table_of(bm, 1) == std::vector<int32_t>{0, 1});
  CHECK(table_of(bm, 2) == std::vector<int32_t>{2, 3});
  for (int32_t b = 0; b < 4; ++b) REQUIRE(bm.mark_cached(b).is_ok());
  CHECK(bm.cached_blocks() == 4);
  CHECK(bm.evictable_blocks() == 0);  // held, so not evictable

  // Released 2 then 1, each tail first: the order of eviction is 3, 2, 1, 0.
  bm.release(2);
  bm.release(1);
  require_block_accounting(bm, {});
  CHECK(bm.free_blocks() == 2);
  CHECK(bm.evictable_blocks() == 4);
  CHECK(bm.available_blocks() == 6);
  CHECK(bm.cached_blocks() == 4);

  REQUIRE(bm.add_sequence(3).is_ok());
  REQUIRE(bm.reserve(3, 8).is_ok());  // the two free blocks
  CHECK(evicted.empty());
  CHECK(table_of(bm, 3) == std::vector<int32_t>{4, 5});
  REQUIRE(bm.reserve(3, 12).is_ok());
  CHECK(evicted == std::vector<int32_t>{3});
  CHECK_FALSE(bm.is_cached(3));
  CHECK(bm.ref_count(3) == 1);
  REQUIRE(bm.reserve(3, 20).is_ok());
  CHECK(evicted == std::vector<int32_t>{3, 2, 1});
  CHECK(bm.cached_blocks() == 1);
  CHECK(bm.evictable_blocks() == 1);
  CHECK(bm.reserve(3, 28).code() == StatusCode::resource_exhausted);  // 2 needed, 1 available
  CHECK(evicted.size() == 3);
  require_block_accounting(bm, {3});
}

TEST_CASE("a cached block held again leaves the evictable order and rejoins it at the end when released") {
  BlockManager bm({.num_blocks = 4, .block_size = 4});
  std::vector<int32_t> evicted;
  bm.set_eviction_listener([&](int32_t b) { evicted.push_back(b); });
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 16).is_ok());  // blocks 0..3
  for (int32_t b = 0; b < 4; ++b) REQUIRE(bm.mark_cached(b).is_ok());
  bm.release(1);  // order: 3, 2, 1, 0

  const std::vector<int32_t> head{0, 1};
  REQUIRE(bm.add_sequence(2, head).is_ok());
  CHECK(bm.length(2) == 8);
  CHECK(table_of(bm, 2) == head);
  CHECK(bm.ref_count(0) == 1);
  CHECK(bm.evictable_blocks() == 2);
  CHECK(bm.available_blocks() == 2);
  require_block_accounting(bm, {2});
  bm.release(2);  // order: 3, 2, 1, 0 -> after 1 and 0 rejoin at the end: 3, 2, 1, 0

  const std::vector<int32_t> tail{2, 3};
  REQUIRE(bm.add_sequence(3, tail).is_ok());
  bm.release(3);  // 3 then 2 rejoin at the end: 1, 0, 3, 2

  REQUIRE(bm.add_sequence(4).is_ok());
  REQUIRE(bm.reserve(4, 16).is_ok());
  CHECK(evicted == std::vector<int32_t>{1, 0, 3, 2});
  CHECK(table_of(bm, 4) == evicted);
  CHECK(bm.cached_blocks() == 0);
  require_block_accounting(bm, {4});
}

TEST_CASE("a sequence can start holding cached blocks, and a bad list changes nothing") {
  BlockManager bm({.num_blocks = 8, .block_size = 4});
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 14).is_ok());  // blocks 0..3, the last partial
  REQUIRE(bm.mark_cached(0).is_ok());
  REQUIRE(bm.mark_cached(1).is_ok());
  REQUIRE(bm.mark_cached(2).is_ok());

  const auto refused = [&](std::vector<int32_t> blocks, SeqId id, const char* says) {
    const tessera::Status s = bm.add_sequence(id, blocks);
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(s.message().find(says) != std::string::npos);
    if (id != 1) CHECK_FALSE(bm.has(id));
    require_block_accounting(bm, {1});
  };
  refused({0, 1, 3}, 2, "block 3 (at index 2) is not cached");
  refused({0, 8}, 2, "outside [0, 8)");
  refused({0, -1}, 2, "outside [0, 8)");
  refused({0, 1, 0}, 2, "block 0 appears twice");
  refused({0}, 1, "already exists");
  CHECK(bm.ref_count(0) == 1);

  // Shared while held by 1; an empty list is an empty sequence.
  REQUIRE(bm.add_sequence(2, std::vector<int32_t>{0, 1, 2}).is_ok());
  CHECK(bm.length(2) == 12);
  CHECK(bm.ref_count(0) == 2);
  CHECK(bm.slot(2, 5) == bm.slot(1, 5));
  REQUIRE(bm.add_sequence(3, std::vector<int32_t>{}).is_ok());
  CHECK(bm.length(3) == 0);
  require_block_accounting(bm, {1, 2, 3});

  // Growing past the adopted blocks takes fresh ones and copies nothing (they are full).
  std::vector<BlockCopy> copies;
  CHECK(bm.blocks_needed(2, 13) == 1);
  REQUIRE(bm.reserve(2, 13, &copies).is_ok());
  CHECK(copies.empty());
  CHECK(bm.block_table(2)[3] != bm.block_table(1)[3]);
  CHECK(bm.ref_count(bm.block_table(2)[3]) == 1);
  require_block_accounting(bm, {1, 2, 3});
}

TEST_CASE("a cached block is never written: a sequence truncated into one copies it before it grows") {
  BlockManager bm({.num_blocks = 4, .block_size = 4});
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 8).is_ok());  // blocks 0, 1
  REQUIRE(bm.mark_cached(0).is_ok());
  REQUIRE(bm.mark_cached(1).is_ok());
  // Another cached block nobody holds, evictable.
  REQUIRE(bm.add_sequence(2).is_ok());
  REQUIRE(bm.reserve(2, 4).is_ok());  // block 2
  REQUIRE(bm.mark_cached(2).is_ok());
  bm.release(2);

  REQUIRE(bm.truncate(1, 6).is_ok());  // block 1 is now a partial last block, held once, cached
  CHECK(bm.ref_count(1) == 1);
  CHECK(bm.blocks_needed(1, 6) == 0);
  CHECK(bm.blocks_needed(1, 7) == 1);  // the copy
  CHECK(bm.blocks_needed(1, 9) == 2);  // the copy and a block for position 8
  CHECK(bm.reserve(1, 7).code() == StatusCode::invalid_argument);  // no copy list
  require_block_accounting(bm, {1});

  // Free block 3 becomes the copy, evictable block 2 is taken for position 8; the
  // cached source is let go, evictable, with its contents intact.
  std::vector<BlockCopy> copies;
  REQUIRE(bm.reserve(1, 9, &copies).is_ok());
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].src == 1);
  CHECK(copies[0].dst == 3);
  CHECK(table_of(bm, 1) == std::vector<int32_t>{0, 3, 2});
  CHECK(bm.is_cached(1));
  CHECK(bm.ref_count(1) == 0);
  CHECK(bm.evictable_blocks() == 1);
  require_block_accounting(bm, {1});

  // A truncate to a block boundary keeps no partial block, so growing copies nothing.
  REQUIRE(bm.truncate(1, 4).is_ok());
  copies.clear();
  REQUIRE(bm.reserve(1, 6, &copies).is_ok());
  CHECK(copies.empty());
  CHECK(bm.block_table(1)[0] == 0);
  require_block_accounting(bm, {1});
}

TEST_CASE("a fork shares cached blocks, and each side copies a cached partial block before writing it") {
  BlockManager bm({.num_blocks = 8, .block_size = 4});
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 8).is_ok());
  REQUIRE(bm.mark_cached(0).is_ok());
  REQUIRE(bm.mark_cached(1).is_ok());
  REQUIRE(bm.fork(1, 2).is_ok());
  CHECK(bm.ref_count(1) == 2);
  // Appending after full blocks writes none of them.
  std::vector<BlockCopy> copies;
  REQUIRE(bm.reserve(2, 10, &copies).is_ok());
  CHECK(copies.empty());
  REQUIRE(bm.truncate(1, 7).is_ok());
  REQUIRE(bm.reserve(1, 8, &copies).is_ok());
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].src == 1);
  CHECK(bm.ref_count(1) == 1);  // still 2's, still cached
  CHECK(bm.is_cached(1));
  bm.release(1);
  bm.release(2);
  require_block_accounting(bm, {});
  CHECK(bm.evictable_blocks() == 2);
  CHECK(bm.free_blocks() == 6);
}

TEST_CASE("mark_cached takes only held blocks, and uncache makes an evictable block free") {
  BlockManager bm({.num_blocks = 4, .block_size = 4});
  CHECK(bm.mark_cached(0).code() == StatusCode::invalid_argument);  // free
  CHECK(bm.mark_cached(4).code() == StatusCode::invalid_argument);
  CHECK(bm.mark_cached(-1).code() == StatusCode::invalid_argument);
  REQUIRE(bm.add_sequence(1).is_ok());
  REQUIRE(bm.reserve(1, 8).is_ok());
  REQUIRE(bm.mark_cached(0).is_ok());
  REQUIRE(bm.mark_cached(0).is_ok());  // twice: no-op
  REQUIRE(bm.mark_cached(1).is_ok());
  CHECK(bm.cached_blocks() == 2);
  bm.uncache(1);  // held: just un-marked
  CHECK_FALSE(bm.is_cached(1));
  bm.release(1);
  CHECK(bm.evictable_blocks() == 1);
  CHECK(bm.free_blocks() == 3);
  bm.uncache(0);
  bm.uncache(0);
  bm.uncache(7);
  CHECK(bm.evictable_blocks() == 0);
  CHECK(bm.free_blocks() == 4);
  CHECK(bm.cached_blocks() == 0);
  require_block_accounting(bm, {});
}

TEST_CASE("generation changes when a sequence is added, forked or truncated, not when it grows") {
  BlockManager bm({.num_blocks = 4, .block_size = 4});
  CHECK(bm.generation(1) == 0);
  REQUIRE(bm.add_sequence(1).is_ok());
  const uint64_t g1 = bm.generation(1);
  CHECK(g1 != 0);
  REQUIRE(bm.reserve(1, 9).is_ok());
  CHECK(bm.generation(1) == g1);
  REQUIRE(bm.fork(1, 2).is_ok());
  CHECK(bm.generation(2) != g1);
  REQUIRE(bm.truncate(1, 9).is_ok());  // keeps everything
  CHECK(bm.generation(1) == g1);
  REQUIRE(bm.truncate(1, 5).is_ok());
  CHECK(bm.generation(1) != g1);
  CHECK(bm.generation(1) != bm.generation(2));
}
