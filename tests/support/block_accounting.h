#pragma once
// The KV block accounting recounted from the outside: every block is free,
// evictable (cached, held by no one) or held by exactly the live sequences
// whose tables name it, and the BlockManager's own check agrees.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "engine/kv/block_manager.h"

namespace tessera::testing {

inline void require_block_accounting(const BlockManager& bm, const std::set<SeqId>& live) {
  std::map<int32_t, int32_t> refs;
  for (SeqId id : live) {
    REQUIRE(bm.has(id));
    const auto table = bm.block_table(id);
    REQUIRE((int32_t)table.size() == bm.blocks_for(bm.length(id)));
    for (int32_t b : table) {
      REQUIRE(b >= 0);
      REQUIRE(b < bm.num_blocks());
      ++refs[b];
    }
  }
  REQUIRE(bm.num_sequences() == live.size());
  int32_t unheld_cached = 0;
  for (int32_t b = 0; b < bm.num_blocks(); ++b) {
    const auto it = refs.find(b);
    REQUIRE(bm.ref_count(b) == (it == refs.end() ? 0 : it->second));
    if (it == refs.end() && bm.is_cached(b)) ++unheld_cached;
  }
  REQUIRE(bm.evictable_blocks() == unheld_cached);
  REQUIRE(bm.free_blocks() == bm.num_blocks() - (int32_t)refs.size() - unheld_cached);
  REQUIRE(bm.available_blocks() == bm.free_blocks() + bm.evictable_blocks());
  const Status s = bm.check_invariants();
  INFO(s.message());
  REQUIRE(s.is_ok());
}

}  // namespace tessera::testing
