#pragma once
// The messages a prefill worker sends a decode worker for one request
// (one transfer), as UCX tagged messages whose tag is (transfer id << 4) | kind:
//   begin   the cache's shape and the prompt's ids, so the receiver can size
//           the payload and check it is the prompt its own request holds;
//   blocks  one pool's blocks of one prompt chunk, sent as each chunk's step
//           finishes (pool after pool: every layer's K, then V);
//   commit  the first sampled token, the sampler's draw stream after it and
//           the token's logprobs when the request asks for them;
//   abort   the prefill failed (the message says why).
// Every field is little-endian on the hosts we run; both sides are this build.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/disagg/kv_blocks.h"
#include "tessera/sampling.h"

namespace tessera::disagg {

enum class WireKind : uint64_t { begin = 1, blocks = 2, commit = 3, abort = 4 };

constexpr uint64_t kTransferIdBits = 60;
constexpr uint64_t kKindMask = 0xf;
inline uint64_t wire_tag(uint64_t transfer_id, WireKind k) { return (transfer_id << 4) | (uint64_t)k; }
inline uint64_t tag_transfer(uint64_t tag) { return tag >> 4; }
inline WireKind tag_kind(uint64_t tag) { return (WireKind)(tag & kKindMask); }

struct BeginMessage {
  KvShape shape;
  std::vector<int32_t> prompt;
};
std::vector<std::byte> encode_begin(const BeginMessage& m);
Expected<BeginMessage> decode_begin(std::span<const std::byte> bytes);

// A blocks message: this header, then n_blocks blocks of pool `pool`.
struct BlocksHeader {
  int32_t pool = 0;
  int32_t first_block = 0;
  int32_t n_blocks = 0;
  int32_t reserved = 0;
};

// The token a prefill worker sampled after the prompt for one of the
// request's n sequences (a stop token included), the sampler's draw stream
// after it, and, when the request asks for logprobs, the token's and its
// alternatives' (computed from logits the decode worker never sees).
struct FirstLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;
};
struct FirstToken {
  int32_t token = -1;
  uint64_t rng_state = 0;
  std::optional<FirstLogprobs> logprobs;
};

// commit: each sequence's first token, in index order (on the wire: their
// count, then per sequence a fixed part and its alternatives as (token,
// logprob) pairs).
struct CommitMessage {
  std::vector<FirstToken> first;
};
std::vector<std::byte> encode_commit(const CommitMessage& m);
Expected<CommitMessage> decode_commit(std::span<const std::byte> bytes);

}  // namespace tessera::disagg
