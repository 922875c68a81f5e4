#pragma once
// Paged attention's tiled engine (kernels/cuda/paged_attention_tiled.cu),
// behind paged_attention() in kernels/cuda/paged_attention.cu, which checks
// the arguments and calls it when the caller gave a workspace (else it runs
// the per-(token, head) kernel of that file). Arguments reach it checked:
// n_tokens, n_seqs > 0, 1 <= head_dim <= 256, n_heads a multiple of
// n_kv_heads, block_size >= 1.
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

gpuError_t launch_paged_attention_tiled(const AttentionArgs& a, gpuStream_t s);

}  // namespace tessera::gpu::kernels
