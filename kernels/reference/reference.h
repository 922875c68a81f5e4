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
void kv_append(const KvAppendArgs& a);
void paged_attention(const AttentionArgs& a);  // ignores workspace
void silu_mul(const SiluMulArgs& a);
void add(const AddArgs& a);
void softmax(const SoftmaxArgs& a);
void argmax(const ArgmaxArgs& a);
void gather_rows(const GatherRowsArgs& a);

}  // namespace tessera::kernels::reference
