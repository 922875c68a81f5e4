#include "engine/disagg/kv_blocks.h"

#include <cstring>

#include "engine/runtime/model_runner.h"

namespace tessera::disagg {

uint64_t KvShape::block_bytes_all_pools() const {
  uint64_t n = 0;
  for (uint64_t b : pool_block_bytes) n += b;
  return n;
}

KvShape kv_shape(const KvCache& kv) {
  KvShape s;
  s.block_size = kv.spec().block_size;
  s.dtype = kv.spec().dtype;
  for (const KvCache::Pool& p : kv.pools()) s.pool_block_bytes.push_back(p.block_bytes);
  return s;
}

Status check_same_shape(const KvShape& ours, const KvShape& theirs) {
  if (ours.block_size != theirs.block_size)
    return invalid_argument("kv transfer: block size " + std::to_string(theirs.block_size) + " tokens, this worker's is " +
                            std::to_string(ours.block_size));
  if (ours.dtype != theirs.dtype)
    return invalid_argument("kv transfer: --kv-type " + std::string(name(theirs.dtype)) + ", this worker's is " + std::string(name(ours.dtype)));
  if (ours.pool_block_bytes.size() != theirs.pool_block_bytes.size())
    return invalid_argument("kv transfer: " + std::to_string(theirs.pool_block_bytes.size()) + " KV pools, this worker has " +
                            std::to_string(ours.pool_block_bytes.size()) + " (another model?)");
  for (size_t i = 0; i < ours.pool_block_bytes.size(); ++i)
    if (ours.pool_block_bytes[i] != theirs.pool_block_bytes[i])
      return invalid_argument("kv transfer: pool " + std::to_string(i) + " has blocks of " + std::to_string(theirs.pool_block_bytes[i]) +
                              " bytes, this worker's " + std::to_string(ours.pool_block_bytes[i]) + " (another model?)");
  return Status::ok();
}

namespace {

Status check_range(const KvCache& kv, size_t pool, std::span<const int32_t> blocks, size_t bytes) {
  if (pool >= kv.pools().size()) return out_of_range("kv transfer: pool " + std::to_string(pool) + " of " + std::to_string(kv.pools().size()));
  const KvCache::Pool& p = kv.pools()[pool];
  if (bytes != blocks.size() * p.block_bytes)
    return invalid_argument("kv transfer: " + std::to_string(bytes) + " bytes for " + std::to_string(blocks.size()) + " blocks of " +
                            std::to_string(p.block_bytes));
  for (int32_t b : blocks)
    if (b < 0 || b >= kv.spec().num_blocks)
      return out_of_range("kv transfer: block " + std::to_string(b) + " outside the pool's " + std::to_string(kv.spec().num_blocks));
  return Status::ok();
}

}  // namespace

Status read_pool_blocks(ModelRunner& runner, const KvCache& kv, size_t pool, std::span<const int32_t> blocks, std::span<std::byte> out) {
  TS_TRY(check_range(kv, pool, blocks, out.size()));
  const KvCache::Pool& p = kv.pools()[pool];
  // Host memory (the CPU's pools) is copied directly; other devices download.
  if (std::byte* host = p.buffer->host_data()) {
    for (size_t i = 0; i < blocks.size(); ++i) std::memcpy(out.data() + i * p.block_bytes, host + (uint64_t)blocks[i] * p.block_bytes, p.block_bytes);
    return Status::ok();
  }
  Stream& stream = runner.stream(p.device);
  for (size_t i = 0; i < blocks.size(); ++i)
    TS_TRY(stream.download(out.subspan(i * p.block_bytes, p.block_bytes), *p.buffer, (uint64_t)blocks[i] * p.block_bytes));
  return stream.synchronize();
}

Status write_pool_blocks(ModelRunner& runner, KvCache& kv, size_t pool, std::span<const int32_t> blocks, std::span<const std::byte> in) {
  TS_TRY(check_range(kv, pool, blocks, in.size()));
  const KvCache::Pool& p = kv.pools()[pool];
  if (std::byte* host = p.buffer->host_data()) {
    for (size_t i = 0; i < blocks.size(); ++i) std::memcpy(host + (uint64_t)blocks[i] * p.block_bytes, in.data() + i * p.block_bytes, p.block_bytes);
    return Status::ok();
  }
  Stream& stream = runner.stream(p.device);
  for (size_t i = 0; i < blocks.size(); ++i)
    TS_TRY(stream.upload(*p.buffer, (uint64_t)blocks[i] * p.block_bytes, in.subspan(i * p.block_bytes, p.block_bytes)));
  return stream.synchronize();
}

void KvPayload::allocate(const KvShape& s, int32_t n_tokens) {
  shape = s;
  tokens = n_tokens;
  n_blocks = s.block_size > 0 ? (n_tokens + s.block_size - 1) / s.block_size : 0;
  bytes.assign((size_t)n_blocks * s.block_bytes_all_pools(), std::byte{0});
}

uint64_t KvPayload::offset(size_t pool, int32_t block) const {
  uint64_t off = 0;
  for (size_t p = 0; p < pool; ++p) off += (uint64_t)n_blocks * shape.pool_block_bytes[p];
  return off + (uint64_t)block * shape.pool_block_bytes[pool];
}

std::span<std::byte> KvPayload::blocks(size_t pool, int32_t first, int32_t count) {
  return std::span(bytes).subspan(offset(pool, first), (size_t)count * shape.pool_block_bytes[pool]);
}

std::span<const std::byte> KvPayload::blocks(size_t pool, int32_t first, int32_t count) const {
  return std::span(bytes).subspan(offset(pool, first), (size_t)count * shape.pool_block_bytes[pool]);
}

}  // namespace tessera::disagg
