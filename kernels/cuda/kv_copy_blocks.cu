// copy_blocks: the KV blocks copy-on-write duplicates (core/hal/stream.h),
// every layer's K and V pool in one launch. Block (x, y) of the grid copies
// block pair x (grid-stride) of pool y (grid-stride): one block per
// (pair, pool), its threads moving 16 bytes each per step where the pool's
// block size allows (a KV block is block_size rows of n_kv_heads * head_dim
// f32, f16 or bf16 elements: the copy is of bytes, whatever their type; a
// multiple of 16 bytes whenever that product is a multiple of 4, or of 8 for
// 2-byte elements), else 4 bytes, else single bytes.
//
// The copies run in parallel, so the list must not read a block another copy
// of the same launch writes, nor write one block twice; the stream checks
// that and copies such a list in order instead (backends/cuda/gpu_stream.cpp).
#include <cstdint>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;

template <typename Word>
__device__ void copy_words(const std::byte* from, std::byte* to, uint64_t bytes) {
  const Word* s = reinterpret_cast<const Word*>(from);
  Word* d = reinterpret_cast<Word*>(to);
  for (uint64_t i = threadIdx.x; i < bytes / sizeof(Word); i += blockDim.x) d[i] = s[i];
}

__global__ void __launch_bounds__(kThreads)
    copy_blocks_kernel(const PoolBlockCopy* pools, int32_t n_pools, const int32_t* pairs, int32_t n_pairs) {
  for (int32_t p = (int32_t)blockIdx.y; p < n_pools; p += (int32_t)gridDim.y) {
    const PoolBlockCopy pool = pools[p];
    for (int32_t i = (int32_t)blockIdx.x; i < n_pairs; i += (int32_t)gridDim.x) {
      const std::byte* from = pool.src + (uint64_t)pairs[2 * i] * pool.block_bytes;
      std::byte* to = pool.dst + (uint64_t)pairs[2 * i + 1] * pool.block_bytes;
      // The pools' bases are at least 256-byte aligned (the allocator's), so block_bytes decides.
      if (pool.block_bytes % 16 == 0) copy_words<uint4>(from, to, pool.block_bytes);
      else if (pool.block_bytes % 4 == 0) copy_words<uint32_t>(from, to, pool.block_bytes);
      else copy_words<uint8_t>(from, to, pool.block_bytes);
    }
  }
}

}  // namespace

gpuError_t copy_blocks(const CopyBlocksArgs& a, gpuStream_t s) {
  if (a.n_pools < 0 || a.n_pairs < 0) return gpuErrorInvalidValue;
  if (a.n_pools == 0 || a.n_pairs == 0) return gpuSuccess;
  const dim3 grid((unsigned)(a.n_pairs < kMaxGridBlocks ? a.n_pairs : kMaxGridBlocks),
                  (unsigned)(a.n_pools < kMaxGridBlocks ? a.n_pools : kMaxGridBlocks));
  copy_blocks_kernel<<<grid, kThreads, 0, s>>>(a.pools, a.n_pools, a.pairs, a.n_pairs);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
