// Paged attention (kernels/reference/attention.cpp): for every token of every
// sequence and every head, scores against the sequence's visible KV positions
// read through its block table (causal up to the token's position, else the
// sequence's length; a sliding window; the scale, then the soft-cap), the
// softmax, and the weighted sum of V. Grouped-query: head h reads KV head
// h / (n_heads / n_kv_heads).
//
// One block per (token, head), 128 threads (a block loops over several only
// past kMaxBlocks of them). The block finds its token's sequence by a binary
// search over query_start (a device array; n_seqs is a host value):
// log2(n_seqs) cached reads, and the grid needs nothing but n_tokens *
// n_heads, with no host pass over the metadata and no idle blocks for short
// sequences (a grid over (sequence, token in it) would be sized by the
// longest). Blocks of one token's heads are adjacent in the grid, so a GQA
// group's blocks read the same K/V rows close together in time (L2 hits).
//
// Within the block each warp takes every n_warps-th key (a tile of n_warps
// keys per step) and keeps its own online softmax: running max m, sum of
// exponentials l, and the unnormalized weighted sum of V, the head_dim values
// spread over the lanes (lane holds dims lane, lane + warpSize, ...). A key's
// dot is the lanes' partial products summed across the warp. At the end the
// warps' states are merged in shared memory. No workspace, any context length.
//
// Precision: f32 scores, exponentials and sums against the reference's f64;
// expf and tanhf are the full-precision library functions (no fast math), a
// few ulp. A CPU emulation of this file (host expf/tanhf, warps of 32 and of
// 64) measured relative errors of 0.5e-7 to 3e-7 over the conformance
// suite's scenarios, against its bound of 1e-5; error grows slowly with the
// context (f32 running sums over len / n_warps keys per warp): about 1e-6
// for a decode over 20000 keys. The order of
// the sums depends only on the token's own context, so a token's result is
// the same bits whatever else the step holds (batch invariant), though not
// the reference's bits.
//
// This kernel is the fallback: paged_attention() below runs it when the
// caller gives no workspace. With one (the executable always gives
// paged_attention_workspace_bytes for its bucket) it hands the step to the
// tiled engine of kernels/cuda/paged_attention_tiled.cu: the split-context
// (flash-decoding) schedule for steps of few (token, KV head) items, the
// query-tile (FlashAttention-style) schedule for the others, both in one
// order of sums per row, so their results are the same bits. This kernel's
// order differs from the engine's (per-warp strides, a warp-sum per dot):
// the two agree to rounding, not bit for bit.
#include <cmath>

#include "kernels/cuda/attention_paths.h"
#include "kernels/cuda/gpu_device.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;  // as the Vulkan split kernel (kernels/vulkan/attention_split.comp)
constexpr int kMinWarpSize = 32;  // NVIDIA 32, AMD 64 (CDNA) or 32 (RDNA): never less
constexpr int kMaxWarps = kThreads / kMinWarpSize;
constexpr int kMaxDimsPerLane = kMaxHeadDim / kMinWarpSize;  // 64-wide warps use the first half
// Blocks beyond this loop over items: far above what fills any GPU, and
// within HIP's limit of 2^32 threads per launch.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

// The settings and arrays, and the group size (heads per KV head).
struct Attention : PagedAttention {
  int32_t group = 1;
};

// Per-warp online-softmax states, merged at the end of an item.
struct WarpStates {
  float acc[kMaxWarps][kMaxHeadDim];
  float m[kMaxWarps], l[kMaxWarps];
};

// Item `item` = token * n_heads + head, by the whole block. Every thread
// reaches the barrier or none does (the early return is block-uniform).
__device__ void attend(const Attention& a, int64_t item, WarpStates& ws) {
  const int64_t t = item / a.n_heads;
  const int h = (int)(item % a.n_heads);
  const int32_t s = sequence_of(a.query_start, a.n_seqs, t);
  if (s < 0) return;

  // The visible keys [first, len), as the reference; len is also kept within
  // the block table row so that bad metadata cannot read past it.
  const int64_t position = a.positions[t];
  const int64_t table_len = (int64_t)a.max_blocks_per_seq * a.block_size;
  int64_t len = a.causal ? position + 1 : (int64_t)a.seq_lens[s];
  if (len > table_len) len = table_len;
  int64_t first = 0;
  if (a.window > 0 && position - a.window + 1 > 0) first = position - a.window + 1;

  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, n_warps = blockDim.x / warpSize;
  const int hd = a.head_dim;
  const int64_t kv_row = (int64_t)(a.n_heads / a.group) * hd;
  const int64_t kv_head = (int64_t)(h / a.group) * hd;
  const int32_t* table = a.block_tables + (int64_t)s * a.max_blocks_per_seq;

  float q[kMaxDimsPerLane], acc[kMaxDimsPerLane];
  const float* q_row = a.q + (t * a.n_heads + h) * hd;
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int d = lane + i * warpSize;
    q[i] = d < hd ? q_row[d] : 0.0f;
    acc[i] = 0.0f;
  }

  float m = -INFINITY, l = 0.0f;
  for (int64_t j = first + warp; j < len; j += n_warps) {  // warp-uniform: every lane takes the same keys
    const int32_t block = table[j / a.block_size];
    if (block < 0) continue;  // not a block of the pool (bad metadata): the key is left out
    const int64_t slot = (int64_t)block * a.block_size + j % a.block_size;
    const int64_t kv_at = slot * kv_row + kv_head;
    float partial = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + i * warpSize;
      if (d < hd) partial += q[i] * load_kv(a.k_pool, a.kv_dtype, kv_at + d);
    }
    float score = warp_sum(partial) * a.scale;
    if (a.softcap > 0.0f) score = a.softcap * tanhf(score / a.softcap);
    // Online softmax: rescale what was summed under the old max (exp(-inf) = 0 the first time).
    const float m_new = fmaxf(m, score);
    const float correction = expf(m - m_new);
    const float p = expf(score - m_new);
    l = l * correction + p;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + i * warpSize;
      if (d < hd) acc[i] = acc[i] * correction + p * load_kv(a.v_pool, a.kv_dtype, kv_at + d);
    }
    m = m_new;
  }

  // Merge the warps: each one's sums scaled from its max to the block's.
  if (lane == 0) {
    ws.m[warp] = m;
    ws.l[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < kMaxDimsPerLane; ++i) {
    const int d = lane + i * warpSize;
    if (d < hd) ws.acc[warp][d] = acc[i];
  }
  __syncthreads();
  // Loops over kMaxWarps with a guard rather than to n_warps, so that they
  // unroll and weight[] stays in registers.
  float m_all = -INFINITY;
#pragma unroll
  for (int w = 0; w < kMaxWarps; ++w)
    if (w < n_warps) m_all = fmaxf(m_all, ws.m[w]);
  float weight[kMaxWarps];  // exp(m_w - m_all); 0 for a warp that saw no key
  float l_all = 0.0f;
#pragma unroll
  for (int w = 0; w < kMaxWarps; ++w) {
    weight[w] = w < n_warps && ws.m[w] != -INFINITY ? expf(ws.m[w] - m_all) : 0.0f;
    if (w < n_warps) l_all += ws.l[w] * weight[w];
  }
  // No visible key: the reference's sums are all zero, and so is its output.
  const float inv_l = l_all > 0.0f ? 1.0f / l_all : 0.0f;
  float* out = a.out + (t * a.n_heads + h) * hd;
  for (int d = (int)threadIdx.x; d < hd; d += (int)blockDim.x) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kMaxWarps; ++w)
      if (w < n_warps) o += ws.acc[w][d] * weight[w];
    out[d] = o * inv_l;
  }
}

// A block-uniform grid-stride loop over the (token, head) items: one item
// per block unless the step has more than kMaxBlocks of them.
__global__ void __launch_bounds__(kThreads) paged_attention_kernel(const Attention a, int64_t n_items) {
  __shared__ WarpStates ws;
  for (int64_t item = blockIdx.x; item < n_items; item += gridDim.x) {
    attend(a, item, ws);
    __syncthreads();  // this item's merge has read ws before the next one writes it
  }
}

}  // namespace

gpuError_t paged_attention(const AttentionArgs& a, gpuStream_t s) {
  if (a.n_tokens == 0 || a.n_seqs == 0) return gpuSuccess;
  const AttentionParams& p = a.p;
  if (a.n_tokens < 0 || a.n_seqs < 0 || a.max_blocks_per_seq < 0 || p.n_heads < 1 || p.n_kv_heads < 1 ||
      p.n_heads % p.n_kv_heads != 0 || p.head_dim < 1 || p.head_dim > kMaxHeadDim || p.block_size < 1)
    return gpuErrorInvalidValue;
  if (a.workspace) return launch_paged_attention_tiled(a, s);
  Attention k;
  static_cast<PagedAttention&>(k) = paged_attention_of(a);
  k.group = p.n_heads / p.n_kv_heads;
  const int64_t n_items = a.n_tokens * p.n_heads;
  const unsigned blocks = (unsigned)(n_items < kMaxBlocks ? n_items : kMaxBlocks);
  paged_attention_kernel<<<blocks, kThreads, 0, s>>>(k, n_items);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
