#pragma once
// A prompt prefilled in one engine with its KV blocks copied out as the
// engine hands them over (ServingEngine::submit_prefill), assembled into the
// payload another engine imports: what a prefill worker does, without the wire.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "engine/disagg/kv_blocks.h"
#include "engine/serving/serving_engine.h"

namespace tessera::testing {

struct Prefilled {
  KvImport import;
  std::shared_ptr<RequestState> handle;
  int chunks = 0;      // hand-overs that carried pool 0: one per prompt chunk
  int hand_overs = 0;  // every call of the hook (one per pool where the device announces each)
};

// Runs q's prompt on `e` with max_tokens 1, copying each hand-over's blocks
// into a payload; `fail_at` (1-based) makes that chunk's hand-over fail, as a
// transfer that breaks midway. `also` runs first in every hand-over.
inline Prefilled prefill(ServingEngine& e, const Request& q, int fail_at = 0, std::function<void(const KvChunk&)> also = {}) {
  Prefilled out;
  Request pq = q;
  pq.max_tokens = 1;
  auto hook = [&](const KvChunk& c) -> Status {
    if (also) also(c);
    ++out.hand_overs;
    if (std::find(c.pools.begin(), c.pools.end(), size_t{0}) != c.pools.end() && ++out.chunks == fail_at)
      return io_error("kv transfer: the decode worker went away (test)");
    disagg::KvPayload& p = out.import.payload;
    if (p.bytes.empty()) p.allocate(disagg::kv_shape(c.kv), c.prompt_tokens);
    for (const size_t pool : c.pools)
      TS_TRY(disagg::read_pool_blocks(c.runner, c.kv, pool, c.blocks, p.blocks(pool, c.first_block, (int32_t)c.blocks.size())));
    return Status::ok();
  };
  auto h = e.submit_prefill(pq, hook);
  REQUIRE_MESSAGE(h.has_value(), h.status().message());
  out.handle = *h;
  (*h)->wait();
  out.import.first = (*h)->first_sampled;
  return out;
}

}  // namespace tessera::testing
