#include "engine/disagg/kv_wire.h"

#include <algorithm>
#include <cstring>

namespace tessera::disagg {

namespace {

constexpr uint32_t kMagic = 0x4b565431;  // "KVT1"

struct BeginFixed {
  uint32_t magic = kMagic;
  uint32_t n_pools = 0;
  int32_t block_size = 0;
  int32_t dtype = 0;
  int32_t prompt_tokens = 0;
  int32_t reserved = 0;
};

struct CommitHeader {
  int32_t n_seqs = 0;
  int32_t reserved = 0;
};
struct CommitFixed {
  int32_t first_token = -1;
  int32_t n_top = -1;  // -1: no logprobs; else how many (token, logprob) pairs follow
  uint64_t rng_state = 0;
  TokenLogprob logprob{};
};

}  // namespace

std::vector<std::byte> encode_begin(const BeginMessage& m) {
  BeginFixed f;
  f.n_pools = (uint32_t)m.shape.pool_block_bytes.size();
  f.block_size = m.shape.block_size;
  f.dtype = (int32_t)m.shape.dtype;
  f.prompt_tokens = (int32_t)m.prompt.size();
  std::vector<std::byte> out(sizeof f + f.n_pools * sizeof(uint64_t) + m.prompt.size() * sizeof(int32_t));
  std::byte* p = out.data();
  std::memcpy(p, &f, sizeof f);
  p += sizeof f;
  std::memcpy(p, m.shape.pool_block_bytes.data(), f.n_pools * sizeof(uint64_t));
  p += f.n_pools * sizeof(uint64_t);
  std::memcpy(p, m.prompt.data(), m.prompt.size() * sizeof(int32_t));
  return out;
}

Expected<BeginMessage> decode_begin(std::span<const std::byte> bytes) {
  BeginFixed f;
  if (bytes.size() < sizeof f) return invalid_argument("kv transfer: a begin message of " + std::to_string(bytes.size()) + " bytes");
  std::memcpy(&f, bytes.data(), sizeof f);
  if (f.magic != kMagic) return invalid_argument("kv transfer: a begin message without its magic (another program on this port?)");
  const uint64_t want = sizeof f + (uint64_t)f.n_pools * sizeof(uint64_t) + (uint64_t)(f.prompt_tokens < 0 ? 0 : f.prompt_tokens) * sizeof(int32_t);
  if (f.prompt_tokens < 1 || f.block_size < 1 || bytes.size() != want)
    return invalid_argument("kv transfer: a begin message of " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want));
  BeginMessage m;
  m.shape.block_size = f.block_size;
  m.shape.dtype = (DType)f.dtype;
  m.shape.pool_block_bytes.resize(f.n_pools);
  std::memcpy(m.shape.pool_block_bytes.data(), bytes.data() + sizeof f, f.n_pools * sizeof(uint64_t));
  m.prompt.resize((size_t)f.prompt_tokens);
  std::memcpy(m.prompt.data(), bytes.data() + sizeof f + f.n_pools * sizeof(uint64_t), m.prompt.size() * sizeof(int32_t));
  return m;
}

std::vector<std::byte> encode_commit(const CommitMessage& m) {
  size_t bytes = sizeof(CommitHeader);
  for (const FirstToken& f : m.first) bytes += sizeof(CommitFixed) + (f.logprobs ? f.logprobs->top.size() : 0) * sizeof(TokenLogprob);
  std::vector<std::byte> out(bytes);
  std::byte* p = out.data();
  const CommitHeader h{(int32_t)m.first.size(), 0};
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  for (const FirstToken& f : m.first) {
    CommitFixed c;
    c.first_token = f.token;
    c.rng_state = f.rng_state;
    if (f.logprobs) {
      c.n_top = (int32_t)f.logprobs->top.size();
      c.logprob = f.logprobs->chosen;
    }
    std::memcpy(p, &c, sizeof c);
    p += sizeof c;
    if (c.n_top > 0) std::memcpy(p, f.logprobs->top.data(), (size_t)c.n_top * sizeof(TokenLogprob));
    p += (size_t)std::max(c.n_top, 0) * sizeof(TokenLogprob);
  }
  return out;
}

Expected<CommitMessage> decode_commit(std::span<const std::byte> bytes) {
  auto malformed = [&](const std::string& why) {
    return invalid_argument("kv transfer: a commit message of " + std::to_string(bytes.size()) + " bytes: " + why);
  };
  CommitHeader h;
  if (bytes.size() < sizeof h) return malformed("shorter than its header");
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.n_seqs < 1 || (uint64_t)h.n_seqs > (bytes.size() - sizeof h) / sizeof(CommitFixed))
    return malformed("it says " + std::to_string(h.n_seqs) + " sequences");
  CommitMessage m;
  size_t at = sizeof h;
  for (int32_t i = 0; i < h.n_seqs; ++i) {
    CommitFixed c;
    if (bytes.size() - at < sizeof c) return malformed("sequence " + std::to_string(i) + " is cut short");
    std::memcpy(&c, bytes.data() + at, sizeof c);
    at += sizeof c;
    if (c.n_top < -1 || (uint64_t)std::max(c.n_top, 0) > (bytes.size() - at) / sizeof(TokenLogprob))
      return malformed("sequence " + std::to_string(i) + " says " + std::to_string(c.n_top) + " alternatives");
    FirstToken& f = m.first.emplace_back();
    f.token = c.first_token;
    f.rng_state = c.rng_state;
    if (c.n_top >= 0) {
      f.logprobs = FirstLogprobs{c.logprob, std::vector<TokenLogprob>((size_t)c.n_top)};
      if (c.n_top) std::memcpy(f.logprobs->top.data(), bytes.data() + at, (size_t)c.n_top * sizeof(TokenLogprob));
      at += (size_t)c.n_top * sizeof(TokenLogprob);
    }
  }
  if (at != bytes.size()) return malformed(std::to_string(bytes.size() - at) + " bytes past its last sequence");
  return m;
}

}  // namespace tessera::disagg
