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
void elementwise(const ElementwiseArgs& a);           // each instruction as its own op over whole tensors
void matmul_epilogue(const MatmulEpilogueArgs& a);    // matmul, then elementwise over the product

}  // namespace tessera::kernels::reference
