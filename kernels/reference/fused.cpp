// The fused ops, defined as the unfused patterns they replace, so the
// oracle of a fused kernel is the oracle of its parts.
#include <cstring>
#include <vector>

#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

void matmul_add(const MatmulAddArgs& a) {
  matmul(a.mm);
  add({a.mm.y, a.residual, a.mm.y, a.mm.m * a.mm.n});
}

void matmul_silu_mul(const MatmulSiluMulArgs& a) {
  matmul(a.mm);
  const int64_t f = a.mm.n / 2;
  for (int64_t r = 0; r < a.mm.m; ++r)
    silu_mul({a.mm.y + r * a.mm.n, a.mm.y + r * a.mm.n + f, a.out + r * f, f});
}

void matmul_qkv(const MatmulQkvArgs& a) {
  matmul(a.mm);
  for (int64_t r = 0; r < a.mm.m; ++r) {
    const float* y = a.mm.y + r * a.mm.n;
    std::memcpy(a.q + r * a.q_rows, y, (size_t)a.q_rows * 4);
    std::memcpy(a.k + r * a.kv_rows, y + a.q_rows, (size_t)a.kv_rows * 4);
    std::memcpy(a.v + r * a.kv_rows, y + a.q_rows + a.kv_rows, (size_t)a.kv_rows * 4);
  }
}

void rope_kv_append(const RopeKvAppendArgs& a) {
  const int64_t kv_width = (int64_t)a.p.kv.n_kv_heads * a.p.kv.head_dim;
  const int64_t q_width = (int64_t)a.p.rope.n_heads * a.p.rope.head_dim;
  std::vector<float> k((size_t)(a.n_tokens * kv_width)), q((size_t)(a.n_tokens * q_width));
  std::memcpy(k.data(), a.k, k.size() * 4);
  std::memcpy(q.data(), a.q, q.size() * 4);
  RopeParams rk = a.p.rope;
  rk.n_heads = a.p.kv.n_kv_heads;
  rope({k.data(), a.positions, a.n_tokens, rk, a.table, a.table_rows, a.freq_factors});
  kv_append({k.data(), a.v, a.slot_mapping, a.n_tokens, a.k_pool, a.v_pool, a.kv_dtype, a.num_slots, a.p.kv});
  rope({q.data(), a.positions, a.n_tokens, a.p.rope, a.table, a.table_rows, a.freq_factors});
  std::memcpy(a.q_out, q.data(), q.size() * 4);
}

void add_rms_norm(const AddRmsNormArgs& a) {
  add({a.a, a.b, a.sum, a.rows * a.dim});
  rms_norm({a.sum, a.norm_weight, a.normed, a.rows, a.dim, a.p});
}

// Each instruction runs as its own reference op over whole tensors, into a
// temporary of its own.
void elementwise(const ElementwiseArgs& a) {
  const ElementwiseProgram& p = *a.program;
  const int64_t n = a.rows * a.cols;
  std::vector<std::vector<float>> temps((size_t)p.n_instrs, std::vector<float>((size_t)n));
  auto reg = [&](int r) { return r < p.n_inputs ? a.inputs[r] : temps[(size_t)(r - p.n_inputs)].data(); };
  for (int i = 0; i < p.n_instrs; ++i) {
    const EwInstr& in = p.instrs[i];
    float* out = temps[(size_t)i].data();
    switch (in.op) {
      case EwOp::add: add({reg(in.a), reg(in.b), out, n}); break;
      case EwOp::mul: mul({reg(in.a), reg(in.b), out, n}); break;
      case EwOp::silu: silu({reg(in.a), out, n}); break;
      case EwOp::gelu: gelu({reg(in.a), out, n}); break;
      case EwOp::gelu_f16: gelu_f16({reg(in.a), out, n}); break;
      case EwOp::bias_add: bias_add({reg(in.a), reg(in.b), out, a.rows, a.cols}); break;
    }
  }
  std::memcpy(a.out, temps.back().data(), (size_t)n * 4);
}

void matmul_epilogue(const MatmulEpilogueArgs& a) {
  MatmulArgs mm = a.mm;
  mm.epilogue = nullptr;
  matmul(mm);
  ElementwiseArgs e;
  e.program = a.epilogue.program;
  for (int i = 0; i < kEwMaxInputs; ++i) e.inputs[i] = a.epilogue.inputs[i];
  e.inputs[0] = mm.y;
  e.out = mm.y;
  e.rows = mm.m;
  e.cols = mm.n;
  elementwise(e);
}

}  // namespace tessera::kernels::reference
