// Fused CPU kernels: the existing kernels run back to back inside one
// dispatch. What fusion saves here is the x quantization and the thread-pool
// round trip that separate projections repeat, and the extra passes over
// activations; the arithmetic is the unfused kernels', bit for bit.
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

void matmul_add(const MatmulAddArgs& a, ParallelFor& pf) {
  matmul(a.mm, pf);
  add({a.mm.y, a.residual, a.mm.y, a.mm.m * a.mm.n}, pf);
}

void matmul_silu_mul(const MatmulSiluMulArgs& a, ParallelFor& pf) {
  matmul(a.mm, pf);
  silu_mul_halves(a.mm.y, a.mm.m, a.mm.n / 2, a.out, pf);
}

void matmul_qkv(const MatmulQkvArgs& a, ParallelFor& pf) {
  matmul(a.mm, pf);
  for (int64_t r = 0; r < a.mm.m; ++r) {
    const float* y = a.mm.y + r * a.mm.n;
    std::memcpy(a.q + r * a.q_rows, y, (size_t)a.q_rows * 4);
    std::memcpy(a.k + r * a.kv_rows, y + a.q_rows, (size_t)a.kv_rows * 4);
    std::memcpy(a.v + r * a.kv_rows, y + a.q_rows + a.kv_rows, (size_t)a.kv_rows * 4);
  }
}

void rope_kv_append(const RopeKvAppendArgs& a, ParallelFor& pf) {
  const int64_t kv_width = (int64_t)a.p.kv.n_kv_heads * a.p.kv.head_dim;
  const int64_t q_width = (int64_t)a.p.rope.n_heads * a.p.rope.head_dim;
  std::memcpy(a.k_rot, a.k, (size_t)(a.n_tokens * kv_width) * 4);
  RopeParams rk = a.p.rope;
  rk.n_heads = a.p.kv.n_kv_heads;
  rope({a.k_rot, a.positions, a.n_tokens, rk, a.table, a.table_rows, a.freq_factors}, pf);
  KvAppendArgs kv;
  kv.k = a.k_rot;
  kv.v = a.v;
  kv.slot_mapping = a.slot_mapping;
  kv.n_tokens = a.n_tokens;
  kv.k_pool = a.k_pool;
  kv.v_pool = a.v_pool;
  kv.kv_dtype = a.kv_dtype;
  kv.num_slots = a.num_slots;
  kv.p = a.p.kv;
  kv_append(kv, pf);
  if (a.q_out != a.q) std::memmove(a.q_out, a.q, (size_t)(a.n_tokens * q_width) * 4);
  rope({a.q_out, a.positions, a.n_tokens, a.p.rope, a.table, a.table_rows, a.freq_factors}, pf);
}

void add_rms_norm(const AddRmsNormArgs& a, ParallelFor& pf) {
  add({a.a, a.b, a.sum, a.rows * a.dim}, pf);
  rms_norm({a.sum, a.norm_weight, a.normed, a.rows, a.dim, a.p}, pf);
}

}  // namespace tessera::kernels::cpu
