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
  CommitFixed f;
  f.first_token = m.first_token;
  f.rng_state = m.rng_state;
  if (m.logprob) {
    f.n_top = (int32_t)m.top_logprobs.size();
    f.logprob = *m.logprob;
  }
  const size_t n_top = m.logprob ? m.top_logprobs.size() : 0;
  std::vector<std::byte> out(sizeof f + n_top * sizeof(TokenLogprob));
  std::memcpy(out.data(), &f, sizeof f);
  if (n_top) std::memcpy(out.data() + sizeof f, m.top_logprobs.data(), n_top * sizeof(TokenLogprob));
  return out;
}

Expected<CommitMessage> decode_commit(std::span<const std::byte> bytes) {
  CommitFixed f;
  if (bytes.size() < sizeof f) return invalid_argument("kv transfer: a commit message of " + std::to_string(bytes.size()) + " bytes");
  std::memcpy(&f, bytes.data(), sizeof f);
  const uint64_t want = sizeof f + (uint64_t)std::max(f.n_top, 0) * sizeof(TokenLogprob);
  if (f.n_top < -1 || bytes.size() != want)
    return invalid_argument("kv transfer: a commit message of " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(want));
  CommitMessage m;
  m.first_token = f.first_token;
  m.rng_state = f.rng_state;
  if (f.n_top >= 0) {
    m.logprob = f.logprob;
    m.top_logprobs.resize((size_t)f.n_top);
    if (f.n_top) std::memcpy(m.top_logprobs.data(), bytes.data() + sizeof f, (size_t)f.n_top * sizeof(TokenLogprob));
  }
  return m;
}

}  // namespace tessera::disagg
