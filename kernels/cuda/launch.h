#pragma once
// The launchers of kernels/cuda/*.cu: plain functions the host code calls
// (compiled by the C++ compiler, which never sees a kernel), each queueing
// its kernel(s) on `stream` and returning the runtime's error (a launch
// error included). They take the CPU kernels' argument structs
// (kernels/kernel_args.h) with every pointer a device address: one kernel
// interface for every backend, the semantics those of kernels/reference.
// Row counts are the step's (the host knows them when it queues the step).
#include "kernels/cuda/gpu_runtime.h"
#include "kernels/kernel_args.h"

namespace tessera::gpu::kernels {

using namespace tessera::kernels;

// Whether this build's code runs on the current device: the runtime answers
// with an error (no kernel image for the device) where it has none.
gpuError_t check_kernel_image();

// Asks the current device, once, what the launchers choose by (the prefill
// GEMM's matrix unit), so that no launch queries the device later, inside a
// graph capture. Called when a device is opened.
void prepare_launchers();

// kernels/cuda/elementwise.cu: one pass over n elements, or rows of cols.
gpuError_t add(const AddArgs& a, gpuStream_t s);
gpuError_t mul(const MulArgs& a, gpuStream_t s);
gpuError_t silu(const UnaryArgs& a, gpuStream_t s);
gpuError_t gelu(const UnaryArgs& a, gpuStream_t s);
gpuError_t silu_mul(const SiluMulArgs& a, gpuStream_t s);
gpuError_t gelu_mul(const GeluMulArgs& a, gpuStream_t s);
gpuError_t scale(const ScalarOpArgs& a, gpuStream_t s);
gpuError_t softcap(const ScalarOpArgs& a, gpuStream_t s);
gpuError_t bias_add(const BiasAddArgs& a, gpuStream_t s);
// An ElementwiseProgram's inputs as a kernel parameter: each a device
// pointer, and whether it is a bias row (one row repeated over the rows).
struct EwInputs {
  const float* p[kEwMaxInputs];
  bool row[kEwMaxInputs];
};
gpuError_t elementwise(const ElementwiseArgs& a, gpuStream_t s);
// kernels/cuda/rows.cu: one block per row.
gpuError_t rms_norm(const RmsNormArgs& a, gpuStream_t s);
gpuError_t head_rms_norm(const HeadRmsNormArgs& a, gpuStream_t s);
gpuError_t add_rms_norm(const AddRmsNormArgs& a, gpuStream_t s);
gpuError_t softmax(const SoftmaxArgs& a, gpuStream_t s);
gpuError_t argmax(const ArgmaxArgs& a, gpuStream_t s);
gpuError_t gather_rows(const GatherRowsArgs& a, gpuStream_t s);
gpuError_t embedding(const EmbeddingArgs& a, gpuStream_t s);  // every weight dtype matmul reads
// Which embedding table dtypes embedding() reads.
bool embedding_reads(DType t);

// kernels/cuda/matmul.cu: y = x · wᵀ for every weight dtype matmul_reads
// says yes to, standard row layout; a.workspace unused.
gpuError_t matmul(const MatmulArgs& a, gpuStream_t s);
gpuError_t matmul_add(const MatmulAddArgs& a, gpuStream_t s);  // y = x · wᵀ + residual
bool matmul_reads(DType w);
// Which prefill GEMM (m > 8) the matmul launchers run on a device with these
// properties, in words: "prefill GEMM: mma.sync f16/bf16 (sm_80+; ...)",
// "... MFMA f16/bf16 (gfx90a; ...)", "... MFMA f16 (gfx908; ...)", or the
// slower "... tiled f32 (no matrix unit)"; each says which weights stay tiled.
const char* matmul_gemm_path(const gpuDeviceProp_t& p);
// The epilogues of the packed matmuls, over the product y[m, n] the matmul
// wrote: out[m, f] = silu(y[:, :f]) * y[:, f:], and the split of y into q, k, v.
gpuError_t split_silu_mul(const float* y, float* out, int64_t m, int64_t f, gpuStream_t s);
gpuError_t split_qkv(const float* y, float* q, float* k, float* v, int64_t m, int64_t q_rows, int64_t kv_rows, gpuStream_t s);

// kernels/cuda/rope.cu, kv_append.cu, paged_attention.cu: RoPE (plain, folded table, frequency factors),
// the KV append through the slot mapping, their fusion, and paged attention.
gpuError_t rope(const RopeArgs& a, gpuStream_t s);
gpuError_t kv_append(const KvAppendArgs& a, gpuStream_t s);
gpuError_t rope_kv_append(const RopeKvAppendArgs& a, gpuStream_t s);
// paged_attention: with a.workspace of paged_attention_workspace_bytes(a.p,
// n_tokens, max_blocks_per_seq) bytes (the bucket's maxima bound it) the
// tiled engine (split decode, tiled prefill: paged_attention_tiled.cu);
// without one the per-(token, head) kernel, whose sums run in another order.
gpuError_t paged_attention(const AttentionArgs& a, gpuStream_t s);
uint64_t paged_attention_workspace_bytes(const AttentionParams& p, int64_t max_tokens, int32_t max_blocks_per_seq);

// kernels/cuda/kv_copy_blocks.cu: block pairs copied in every pool, one
// launch. pools and pairs are device arrays ([n_pools] and [n_pairs][2]:
// source block, destination block); no pair may read a block another
// writes, nor two write one block (the caller checks).
struct PoolBlockCopy {
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
  uint64_t block_bytes = 0;
};
struct CopyBlocksArgs {
  const PoolBlockCopy* pools = nullptr;
  int32_t n_pools = 0;
  const int32_t* pairs = nullptr;
  int32_t n_pairs = 0;
};
gpuError_t copy_blocks(const CopyBlocksArgs& a, gpuStream_t s);

// kernels/cuda/matrix_rate.cu: the current device's dense rate on the
// instruction its prefill GEMM uses (or f32 FMAs without a matrix unit),
// measured on `s` (synchronously: the call returns with the figure).
struct MatrixRate {
  double gflops = 0;
  const char* what = "";
};
gpuError_t measure_matrix_rate(MatrixRate& r, gpuStream_t s);

}  // namespace tessera::gpu::kernels
