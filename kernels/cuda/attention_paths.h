#pragma once
// Paged attention's tiled engine (kernels/cuda/paged_attention_tiled.cu),
// behind paged_attention() in kernels/cuda/paged_attention.cu, which checks
// the arguments and calls it when the caller gave a workspace (else it runs
// the per-(token, head) kernel of that file). Arguments reach it checked:
// n_tokens, n_seqs > 0, 1 <= head_dim <= 256, n_heads a multiple of
// n_kv_heads, block_size >= 1.
#include <cmath>

#include "kernels/cuda/kv_element.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

// What every paged-attention kernel takes from AttentionArgs: the step's
// device arrays and the attention's settings, the scale resolved.
struct PagedAttention {
  const float* q = nullptr;
  float* out = nullptr;
  const void* k_pool = nullptr;  // of kv_dtype, read through load_kv (kernels/cuda/kv_element.h)
  const void* v_pool = nullptr;
  DType kv_dtype = DType::f32;
  const int32_t* positions = nullptr;
  const int32_t* query_start = nullptr;
  const int32_t* seq_lens = nullptr;
  const int32_t* block_tables = nullptr;
  int32_t n_seqs = 0, max_blocks_per_seq = 0;
  int32_t n_heads = 0, n_kv_heads = 0, head_dim = 0, block_size = 1;
  int32_t window = 0;  // > 0: keys j with position - j < window
  bool causal = true;
  float scale = 1.0f;
  float softcap = 0.0f;  // > 0: s = softcap * tanh(s / softcap)
};

inline PagedAttention paged_attention_of(const AttentionArgs& a) {
  const AttentionParams& p = a.p;
  PagedAttention k;
  k.q = a.q;
  k.out = a.out;
  k.k_pool = a.k_pool;
  k.v_pool = a.v_pool;
  k.kv_dtype = a.kv_dtype;
  k.positions = a.positions;
  k.query_start = a.query_start;
  k.seq_lens = a.seq_lens;
  k.block_tables = a.block_tables;
  k.n_seqs = a.n_seqs;
  k.max_blocks_per_seq = a.max_blocks_per_seq;
  k.n_heads = p.n_heads;
  k.n_kv_heads = p.n_kv_heads;
  k.head_dim = p.head_dim;
  k.block_size = p.block_size;
  k.window = p.window;
  k.causal = p.causal;
  // The reference's f32 scale (it widens this very value to f64).
  k.scale = p.scale != 0.0f ? p.scale : 1.0f / sqrtf((float)p.head_dim);
  k.softcap = p.softcap;
  return k;
}

// The sequence holding token t: the last s with query_start[s] <= t, or -1
// when t is in none (the reference leaves such a token's output alone: a
// padding token). query_start is non-decreasing (the host checks), empty
// sequences allowed.
__device__ inline int32_t sequence_of(const int32_t* query_start, int32_t n_seqs, int64_t t) {
  if (n_seqs <= 0 || t < query_start[0] || t >= query_start[n_seqs]) return -1;
  int32_t lo = 0, hi = n_seqs - 1;  // query_start[lo] <= t throughout
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (query_start[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

gpuError_t launch_paged_attention_tiled(const AttentionArgs& a, gpuStream_t s);

}  // namespace tessera::gpu::kernels
