// Paged attention's tiled engine: the flash-decoding split for decodes and
// the FlashAttention-style tile for prefill, one kernel and one order of
// arithmetic for both (semantics: kernels/reference/attention.cpp).
//
// One order, several schedules. A row is one (query token, head). Its
// visible keys [first, len) are cut at fixed absolute positions: chunks of
// kChunk = 512 keys, and within a chunk key tiles of T keys (32, or 16 when
// head_dim > 128). Per key tile: each score is one thread's f32 dot over d in
// order (fmaf), times the scale, then the soft-cap; the tile's max; the
// row's online softmax (m, l) updated by one thread, the tile's
// exponentials summed in key order; each acc[d] = acc[d] * correction, then
// fmaf(p_j, v_j[d], .) in key order. A chunk starts from (-inf, 0, 0); the
// chunk states are folded in chunk order into the row's (M, L, OUT) by
// merge_weights / merge_element below, and the output is OUT * (1 / L).
// Every row's arithmetic is thus fixed by its own context and head_dim, never
// by which rows share its block or how many blocks its chunks are spread
// over: a token's result is the same bits whatever else the step holds, and
// whichever schedule the step's shape picks. (The per-(token, head) kernel of
// paged_attention.cu sums in another order; it runs only for callers that
// give no workspace.)
//
// A block (128 threads) takes a set of rows that share a sequence and a KV
// head: up to Q consecutive query tokens of one sequence times G' heads of
// one GQA group (G' the largest divisor of the group within the row budget,
// rows * head_dim <= 2048 so that each thread keeps 16 chunk and 16 running
// accumulators in registers). For each key tile of the rows' union range it
// stages K and V (block table lookups, coalesced rows; zeros for keys no row
// may read) in shared memory once for all its rows, then: scores (row, key)
// pairs over the threads, the rows' softmax updates (one thread per row), the
// accumulators (one thread per (row, d) element). Causal masking, the sliding
// window and missing blocks are per (row, key) masks. The two products are
// plain loops over shared memory tiles of [rows, head_dim] x [T, head_dim]:
// the place for mma.sync / MFMA versions of QKᵀ and PV later (which would
// have to keep the order above, or give it up knowingly).
//
// Schedules (chosen on the host from n_tokens, n_seqs, the bucket's
// max_blocks_per_seq and the params only, never from device data, so a step
// of a shape bucket always launches the same grid):
// * split (flash-decoding): when n_tokens * (KV heads * slices) is small
//   (< kSplitMaxItems), one token per block item and S blocks per item (S
//   filling ~kTargetBlocks blocks, at most the chunks a context can have).
//   Block sigma computes chunks sigma, sigma + S, ... of its token and writes
//   each chunk's (m, l, acc[head_dim]) to the workspace; merge_kernel folds
//   them in chunk order. The number of chunks of a token is its own context
//   / 512: batch invariant.
// * tile (prefill): otherwise, the flattened token axis is cut into tiles of
//   Q tokens (Q = 1 when the step is mostly decodes: n_tokens < 2 n_seqs);
//   a block item is (tile, KV head, head slice). A tile that straddles
//   sequences is served piece by piece, one sequence at a time, each piece's
//   sequence found by sequence_of (a binary search of query_start), so the
//   grid needs no host pass over the metadata and a token outside every
//   sequence (a padded token) costs one search. All chunks of a row are
//   folded in the block: no workspace.
// Blocks loop over items (grid-stride, at most kMaxBlocks launched).
//
// Precision as the per-(token, head) kernel: f32 with full-precision expf /
// tanhf; error grows slowly with the context.
#include <algorithm>
#include <cmath>

#include "kernels/cuda/attention_paths.h"
#include "kernels/cuda/gpu_device.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 128;
constexpr int kChunk = 512;                 // keys per chunk: the unit of the split and of the fold
constexpr int kMaxHeadDim = 256;
constexpr int kAccPerThread = 16;           // registers per thread for a chunk's (and the running) acc
constexpr int kMaxRowElems = kThreads * kAccPerThread;  // rows * head_dim per block
constexpr int kMaxRows = 32;
constexpr int kMaxKeyTile = 32;
constexpr int kKvTileFloats = 32 * 129;     // T keys of stride head_dim | 1: 32 x 129 or 16 x 257
constexpr int kSplitMaxItems = 512;         // fewer (token, KV head slice) items than this: split
constexpr int64_t kTargetBlocks = 1024;     // what the split aims for (~8 blocks per SM of the largest GPUs)
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

// T: keys per staged tile; a function of head_dim only (it is part of the order of the sums).
__host__ __device__ inline int key_tile(int hd) { return hd > 128 ? 16 : 32; }

// The host's choice for one step, and the sizes the workspace is cut by.
struct Schedule {
  int group = 1;           // heads per KV head
  int heads_per_item = 1;  // G': a divisor of group
  int slices = 1;          // group / G'
  int queries = 1;         // Q: query tokens per item
  int splits = 1;          // S: blocks per item (1: no workspace, no merge)
  int chunk_slots = 1;     // chunk partials per (token, head) in the workspace
  int64_t n_items = 0;
};

int64_t chunk_slots_of(const AttentionParams& p, int32_t max_blocks_per_seq) {
  const int64_t table_len = (int64_t)max_blocks_per_seq * p.block_size;
  int64_t slots = (table_len + kChunk - 1) / kChunk;
  // A window of w keys at any offset spans at most (w - 1) / kChunk + 2 chunks.
  if (p.window > 0) slots = std::min<int64_t>(slots, (int64_t)(p.window - 1) / kChunk + 2);
  return std::max<int64_t>(slots, 1);
}

Schedule schedule_of(const AttentionParams& p, int64_t n_tokens, int32_t n_seqs, int32_t max_blocks_per_seq, bool split_allowed) {
  Schedule sc;
  sc.group = p.n_heads / p.n_kv_heads;
  const int max_rows = std::min(kMaxRows, kMaxRowElems / p.head_dim);
  for (int g = std::min(sc.group, max_rows); g >= 1; --g)
    if (sc.group % g == 0) {
      sc.heads_per_item = g;
      break;
    }
  sc.slices = sc.group / sc.heads_per_item;
  sc.chunk_slots = (int)chunk_slots_of(p, max_blocks_per_seq);
  const int64_t per_token = (int64_t)p.n_kv_heads * sc.slices;
  if (split_allowed && n_tokens * per_token < kSplitMaxItems) {
    sc.queries = 1;
    sc.n_items = n_tokens * per_token;
    sc.splits = (int)std::min<int64_t>(sc.chunk_slots, (kTargetBlocks + sc.n_items - 1) / sc.n_items);
  } else {
    sc.queries = n_tokens >= 2 * (int64_t)n_seqs ? std::max(1, max_rows / sc.heads_per_item) : 1;
    sc.n_items = (n_tokens + sc.queries - 1) / sc.queries * per_token;
    sc.splits = 1;
  }
  return sc;
}

struct Tiled : PagedAttention {
  float* partials = nullptr;  // split only: [n_tokens, n_heads, chunk_slots, head_dim + 2]
  int64_t n_tokens = 0, n_blocks = 0;
  Schedule sc;
};

// Token t's visible keys [first, len) in sequence s, len kept within the block table row.
__device__ inline void visible_keys(const Tiled& a, int64_t t, int32_t s, int64_t& first, int64_t& len) {
  const int64_t position = a.positions[t];
  const int64_t table_len = (int64_t)a.max_blocks_per_seq * a.block_size;
  len = a.causal ? position + 1 : (int64_t)a.seq_lens[s];
  if (len > table_len) len = table_len;
  first = 0;
  if (a.window > 0 && position - a.window + 1 > 0) first = position - a.window + 1;
  if (len < first) len = first;
}

// The fold of a chunk's (m, l) into a row's running (M, L): 0 leaves the row
// alone (the chunk saw no key), 1 takes the chunk as it is (the first one),
// 2 scales both by their weights. The schedules share these two functions, so
// their folds are the same bits.
__device__ inline int merge_weights(float& M, float& L, float m, float l, float& wa, float& wb) {
  if (m == -INFINITY) return 0;
  if (M == -INFINITY) {
    M = m;
    L = l;
    return 1;
  }
  const float m_new = fmaxf(M, m);
  wa = expf(M - m_new);
  wb = expf(m - m_new);
  L = fmaf(L, wa, l * wb);
  M = m_new;
  return 2;
}
__device__ inline float merge_element(int mode, float out, float acc, float wa, float wb) {
  return mode == 0 ? out : mode == 1 ? acc : fmaf(out, wa, acc * wb);
}

struct Smem {
  float k[kKvTileFloats];
  float v[kMaxKeyTile * kMaxHeadDim / 2];  // T * head_dim <= 4096
  float q[kMaxRowElems];
  float s[kMaxRows * kMaxKeyTile];  // scores, then exponentials
  int32_t slot[kMaxKeyTile];        // -1: no row reads the key
  int64_t first[kMaxRows], len[kMaxRows];
  float m[kMaxRows], l[kMaxRows];    // the chunk's online softmax
  float corr[kMaxRows];              // this key tile's correction; < 0: the row saw no key in it
  float M[kMaxRows], L[kMaxRows];    // the running fold
  float wa[kMaxRows], wb[kMaxRows];
  int mode[kMaxRows];
};
static_assert(kMaxKeyTile * kMaxHeadDim / 2 >= 32 * 128 && kKvTileFloats >= 16 * 257, "key tiles fit");

// One chunk [klo, khi) (the rows' union, within one chunk) for the rows in
// smem: on return sm.m / sm.l and acc[] hold each row's chunk state.
__device__ void chunk_state(const Tiled& a, Smem& sm, int32_t s, int kvh, int n_rows, int64_t klo, int64_t khi,
                            float (&acc)[kAccPerThread]) {
  const int tid = (int)threadIdx.x, hd = a.head_dim, T = key_tile(hd), ks = hd | 1;
  const int64_t kv_row = (int64_t)a.n_kv_heads * hd, kv_head = (int64_t)kvh * hd;
  const int32_t* table = a.block_tables + (int64_t)s * a.max_blocks_per_seq;
#pragma unroll
  for (int k = 0; k < kAccPerThread; ++k) acc[k] = 0.0f;
  if (tid < n_rows) {
    sm.m[tid] = -INFINITY;
    sm.l[tid] = 0.0f;
  }
  for (int64_t j0 = klo / T * T; j0 < khi; j0 += T) {
    __syncthreads();  // the previous tile's reads of k, v, s are done
    for (int e = tid; e < T * hd; e += kThreads) {
      const int i = e / hd, d = e % hd;
      const int64_t j = j0 + i;
      int64_t slot = -1;
      if (j >= klo && j < khi) {
        const int32_t block = table[j / a.block_size];
        if (block >= 0) slot = (int64_t)block * a.block_size + j % a.block_size;
      }
      if (d == 0) sm.slot[i] = slot < 0 ? -1 : 0;
      sm.k[i * ks + d] = slot < 0 ? 0.0f : load_kv(a.k_pool, a.kv_dtype, slot * kv_row + kv_head + d);
      sm.v[i * hd + d] = slot < 0 ? 0.0f : load_kv(a.v_pool, a.kv_dtype, slot * kv_row + kv_head + d);
    }
    __syncthreads();
    for (int e = tid; e < n_rows * T; e += kThreads) {
      const int r = e / T, i = e % T;
      const int64_t j = j0 + i;
      float score = -INFINITY;
      if (sm.slot[i] >= 0 && j >= sm.first[r] && j < sm.len[r]) {
        const float* qr = sm.q + r * hd;
        const float* kr = sm.k + i * ks;
        float dot = 0.0f;
        for (int d = 0; d < hd; ++d) dot = fmaf(qr[d], kr[d], dot);
        score = dot * a.scale;
        if (a.softcap > 0.0f) score = a.softcap * tanhf(score / a.softcap);
      }
      sm.s[r * T + i] = score;
    }
    __syncthreads();
    if (tid < n_rows) {
      float* sr = sm.s + tid * T;
      float tile_max = -INFINITY;
      for (int i = 0; i < T; ++i) tile_max = fmaxf(tile_max, sr[i]);
      if (tile_max == -INFINITY) {
        sm.corr[tid] = -1.0f;
      } else {
        const float m_new = fmaxf(sm.m[tid], tile_max);
        const float c = expf(sm.m[tid] - m_new);  // 0 for the chunk's first keys
        float sum = 0.0f;
        for (int i = 0; i < T; ++i) {
          const float p = expf(sr[i] - m_new);  // 0 for a masked key
          sr[i] = p;
          sum += p;
        }
        sm.l[tid] = fmaf(sm.l[tid], c, sum);
        sm.m[tid] = m_new;
        sm.corr[tid] = c;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kAccPerThread; ++k) {
      const int e = tid + k * kThreads;
      if (e < n_rows * hd) {
        const int r = e / hd, d = e % hd;
        const float c = sm.corr[r];
        if (c >= 0.0f) {
          const float* pr = sm.s + r * T;
          float x = acc[k] * c;
          for (int i = 0; i < T; ++i) {
            const float p = pr[i];
            if (p != 0.0f) x = fmaf(p, sm.v[i * hd + d], x);
          }
          acc[k] = x;
        }
      }
    }
  }
}

// The rows of tokens [ta, tb) of sequence s times heads kvh * group + slice
// * G' + [0, G'). split < 0: every chunk, folded here, the output written;
// else chunks split, split + S, ... of the (one) token, each to the workspace.
__device__ void attend_rows(const Tiled& a, Smem& sm, int32_t s, int64_t ta, int64_t tb, int kvh, int slice, int split) {
  const int tid = (int)threadIdx.x, hd = a.head_dim, gp = a.sc.heads_per_item;
  const int n_rows = (int)(tb - ta) * gp;
  const int head0 = kvh * a.sc.group + slice * gp;
  __syncthreads();  // the previous piece's reads of smem are done
  if (tid < n_rows) {
    int64_t first, len;
    visible_keys(a, ta + tid / gp, s, first, len);
    sm.first[tid] = first;
    sm.len[tid] = len;
    sm.M[tid] = -INFINITY;
    sm.L[tid] = 0.0f;
  }
  for (int e = tid; e < n_rows * hd; e += kThreads) {
    const int r = e / hd, d = e % hd;
    sm.q[e] = a.q[((ta + r / gp) * a.n_heads + head0 + r % gp) * hd + d];
  }
  __syncthreads();
  int64_t lo = INT64_MAX, hi = 0;
  for (int r = 0; r < n_rows; ++r)
    if (sm.first[r] < sm.len[r]) {
      lo = sm.first[r] < lo ? sm.first[r] : lo;
      hi = sm.len[r] > hi ? sm.len[r] : hi;
    }
  float acc[kAccPerThread], out[kAccPerThread];
#pragma unroll
  for (int k = 0; k < kAccPerThread; ++k) out[k] = 0.0f;

  if (split >= 0) {  // one token: every row has the range [lo, hi)
    if (hi <= lo) return;
    const int64_t c0 = lo / kChunk, n_chunks = (hi - 1) / kChunk - c0 + 1;
    for (int64_t c = split; c < n_chunks && c < a.sc.chunk_slots; c += a.sc.splits) {
      const int64_t klo = (c0 + c) * kChunk > lo ? (c0 + c) * kChunk : lo;
      const int64_t khi = (c0 + c + 1) * kChunk < hi ? (c0 + c + 1) * kChunk : hi;
      chunk_state(a, sm, s, kvh, n_rows, klo, khi, acc);
      // sm.m / sm.l were written before chunk_state's last barrier; acc is this thread's.
      float* base = a.partials + ((ta * a.n_heads + head0) * a.sc.chunk_slots + c) * (hd + 2);
      const int64_t row_stride = (int64_t)a.sc.chunk_slots * (hd + 2);
      if (tid < n_rows) {
        base[tid * row_stride] = sm.m[tid];
        base[tid * row_stride + 1] = sm.l[tid];
      }
#pragma unroll
      for (int k = 0; k < kAccPerThread; ++k) {
        const int e = tid + k * kThreads;
        if (e < n_rows * hd) base[(e / hd) * row_stride + 2 + e % hd] = acc[k];
      }
    }
    return;
  }

  if (hi > lo)
    for (int64_t c = lo / kChunk; c <= (hi - 1) / kChunk; ++c) {
      const int64_t klo = c * kChunk > lo ? c * kChunk : lo;
      const int64_t khi = (c + 1) * kChunk < hi ? (c + 1) * kChunk : hi;
      chunk_state(a, sm, s, kvh, n_rows, klo, khi, acc);
      if (tid < n_rows) sm.mode[tid] = merge_weights(sm.M[tid], sm.L[tid], sm.m[tid], sm.l[tid], sm.wa[tid], sm.wb[tid]);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kAccPerThread; ++k) {
        const int e = tid + k * kThreads;
        if (e < n_rows * hd) {
          const int r = e / hd;
          out[k] = merge_element(sm.mode[r], out[k], acc[k], sm.wa[r], sm.wb[r]);
        }
      }
      // The next chunk's row threads write sm.m / sm.l only; sm.mode / wa / wb are rewritten after its barriers.
    }
#pragma unroll
  for (int k = 0; k < kAccPerThread; ++k) {
    const int e = tid + k * kThreads;
    if (e < n_rows * hd) {
      const int r = e / hd, d = e % hd;
      const float L = sm.L[r];  // written by row thread r before a barrier (the setup's, or the last chunk's)
      const float inv_l = L > 0.0f ? 1.0f / L : 0.0f;
      a.out[((ta + r / gp) * a.n_heads + head0 + r % gp) * hd + d] = out[k] * inv_l;
    }
  }
}

__global__ void __launch_bounds__(kThreads) paged_attention_tiled_kernel(const Tiled a) {
  __shared__ Smem sm;
  const int64_t per_token = (int64_t)a.n_kv_heads * a.sc.slices;
  for (int64_t b = blockIdx.x; b < a.n_blocks; b += gridDim.x) {
    const int64_t item = b / a.sc.splits;
    const int split = a.sc.splits > 1 ? (int)(b % a.sc.splits) : -1;
    const int64_t tile = item / per_token;
    const int kvh = (int)(item % per_token / a.sc.slices), slice = (int)(item % a.sc.slices);
    const int64_t t_end = (tile + 1) * a.sc.queries < a.n_tokens ? (tile + 1) * a.sc.queries : a.n_tokens;
    // The tile's tokens, one sequence's piece at a time (block-uniform: every thread reads the same).
    for (int64_t t = tile * a.sc.queries; t < t_end;) {
      const int32_t s = sequence_of(a.query_start, a.n_seqs, t);
      if (s < 0) {
        if (a.n_seqs > 0 && t < a.query_start[0]) {
          t = a.query_start[0];
          continue;
        }
        break;  // past the last sequence: padding
      }
      const int64_t piece_end = a.query_start[s + 1] < t_end ? a.query_start[s + 1] : t_end;
      attend_rows(a, sm, s, t, piece_end, kvh, slice, split);
      t = piece_end;
    }
  }
}

// Folds each (token, head)'s chunk partials in chunk order, as attend_rows does in a block.
__global__ void __launch_bounds__(kThreads) paged_attention_merge_kernel(const Tiled a, int64_t n_items) {
  const int hd = a.head_dim;
  for (int64_t item = blockIdx.x; item < n_items; item += gridDim.x) {
    const int64_t t = item / a.n_heads;
    const int32_t s = sequence_of(a.query_start, a.n_seqs, t);
    if (s < 0) continue;
    int64_t first, len;
    visible_keys(a, t, s, first, len);
    int64_t n_chunks = len > first ? (len - 1) / kChunk - first / kChunk + 1 : 0;
    if (n_chunks > a.sc.chunk_slots) n_chunks = a.sc.chunk_slots;
    const float* base = a.partials + item * a.sc.chunk_slots * (hd + 2);
    float* out = a.out + item * hd;
    for (int d = (int)threadIdx.x; d < hd; d += kThreads) {
      float M = -INFINITY, L = 0.0f, o = 0.0f, wa = 0.0f, wb = 0.0f;
      for (int64_t c = 0; c < n_chunks; ++c) {
        const float* p = base + c * (hd + 2);
        const int mode = merge_weights(M, L, p[0], p[1], wa, wb);
        o = merge_element(mode, o, p[2 + d], wa, wb);
      }
      out[d] = o * (L > 0.0f ? 1.0f / L : 0.0f);
    }
  }
}

Tiled tiled_args(const AttentionArgs& a) {
  Tiled k;
  static_cast<PagedAttention&>(k) = paged_attention_of(a);
  k.partials = static_cast<float*>(a.workspace);
  k.n_tokens = a.n_tokens;
  return k;
}

}  // namespace

uint64_t paged_attention_workspace_bytes(const AttentionParams& p, int64_t max_tokens, int32_t max_blocks_per_seq) {
  if (p.n_heads < 1 || p.n_kv_heads < 1 || p.n_heads % p.n_kv_heads != 0 || p.head_dim < 1 || p.head_dim > kMaxHeadDim ||
      p.block_size < 1 || max_tokens < 1 || max_blocks_per_seq < 0)
    return 0;
  // The split runs only for steps of fewer than kSplitMaxItems items, so only that many tokens need partials.
  const Schedule sc = schedule_of(p, 1, 1, max_blocks_per_seq, true);
  const int64_t per_token = (int64_t)p.n_kv_heads * sc.slices;
  const int64_t tokens = std::min<int64_t>(max_tokens, (kSplitMaxItems - 1) / per_token);
  return (uint64_t)tokens * p.n_heads * sc.chunk_slots * (p.head_dim + 2) * sizeof(float);
}

gpuError_t launch_paged_attention_tiled(const AttentionArgs& a, gpuStream_t s) {
  Tiled k = tiled_args(a);
  k.sc = schedule_of(a.p, a.n_tokens, a.n_seqs, a.max_blocks_per_seq, a.workspace != nullptr);
  k.n_blocks = k.sc.n_items * k.sc.splits;
  if (k.n_blocks == 0) return gpuSuccess;
  paged_attention_tiled_kernel<<<(unsigned)std::min(k.n_blocks, kMaxBlocks), kThreads, 0, s>>>(k);
  if (k.sc.splits == 1) return gpuGetLastError();
  const int64_t n_items = a.n_tokens * a.p.n_heads;
  paged_attention_merge_kernel<<<(unsigned)std::min(n_items, kMaxBlocks), kThreads, 0, s>>>(k, n_items);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
