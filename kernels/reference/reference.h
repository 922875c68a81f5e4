#pragma once
// The scalar oracle: the plainest correct code for every op, in f64
// accumulation where that is the honest definition, no SIMD, no threads.
// Every other backend is tested against these.
#include "kernels/kernel_args.h"

namespace tessera::kernels::reference {

void embedding(const EmbeddingArgs& a);
void rms_norm(const RmsNormArgs& a);
void matmul(const MatmulArgs& a);  // ignores workspace
void rope(const RopeArgs& a);
// The folded cos/sin table rope reads when given one (graph constant rope_table).
void rope_table(const RopeTableArgs& a);
void kv_append(const KvAppendArgs& a);
void paged_attention(const AttentionArgs& a);  // ignores workspace
void silu_mul(const SiluMulArgs& a);
void add(const AddArgs& a);
void mul(const MulArgs& a);
void silu(const UnaryArgs& a);
void gelu(const UnaryArgs& a);
void bias_add(const BiasAddArgs& a);
void softmax(const SoftmaxArgs& a);
void argmax(const ArgmaxArgs& a);
void gather_rows(const GatherRowsArgs& a);
// Fused ops, defined as their unfused patterns (reference/fused.cpp).
void matmul_add(const MatmulAddArgs& a);
void matmul_silu_mul(const MatmulSiluMulArgs& a);
void matmul_qkv(const MatmulQkvArgs& a);
void rope_kv_append(const RopeKvAppendArgs& a);
void add_rms_norm(const AddRmsNormArgs& a);
// Ops of the architectures beyond llama.
void head_rms_norm(const HeadRmsNormArgs& a);  // rms_norm of each head, in f64
void scale(const ScalarOpArgs& a);             // x * s in f32, as ggml_scale
void softcap(const ScalarOpArgs& a);           // s * tanh(x / s), in f64
// ggml's CPU GELU: x rounded to f16, ggml's f32 tanh GELU of it rounded to f16 (its table's entry).
void gelu_f16(const UnaryArgs& a);
void gelu_mul(const GeluMulArgs& a);           // gelu_f16(gate) * up
void elementwise(const ElementwiseArgs& a);           // each instruction as its own op over whole tensors
void matmul_epilogue(const MatmulEpilogueArgs& a);    // matmul, then elementwise over the product

}  // namespace tessera::kernels::reference

namespace tessera::kernels::reference {

// The collectives of a tensor-parallel graph over every rank's input at
// once (the ranks' own kernels are the communicator's, backends/mpi and the
// GPU plugins): the sum of the ranks' x, in f64, in rank order; and the
// ranks' column ranges (shard_range of `total`) side by side.
void all_reduce_sum(const float* const* ranks, int world, float* y, int64_t n);
void all_gather_columns(const float* const* parts, int world, int64_t rows, int64_t total, float* y);

}  // namespace tessera::kernels::reference
