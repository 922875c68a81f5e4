// Elementwise programs: every instruction runs over a chunk of one row held in
// a stack register file, so a chain of N ops reads its inputs and writes its
// output once instead of N times. Each instruction's loop is the standalone
// kernel's loop (same expression, ew_math.h), so results are the unfused
// ops' bit for bit; the plain loops vectorize (silu and gelu call expf/tanhf
// per element, as the standalone kernels do).
#include <algorithm>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/ew_math.h"
#include "kernels/cpu/ew_program.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

namespace {

constexpr int64_t kChunk = 512;  // elements per register: 8 registers of 2 KiB stay in L1
constexpr int64_t kItemGrain = 32;  // chunks per parallel work item: 16K elements, as the other elementwise kernels

void run_instr(EwOp op, const float* a, const float* b, float* d, int64_t n) {
  switch (op) {
    case EwOp::add:
    case EwOp::bias_add:  // b already points at this chunk's columns of the bias row
      for (int64_t j = 0; j < n; ++j) d[j] = a[j] + b[j];
      return;
    case EwOp::mul:
      for (int64_t j = 0; j < n; ++j) d[j] = a[j] * b[j];
      return;
    case EwOp::silu:
      for (int64_t j = 0; j < n; ++j) d[j] = detail::silu_f32(a[j]);
      return;
    case EwOp::gelu:
      for (int64_t j = 0; j < n; ++j) d[j] = detail::gelu_f32(a[j]);
      return;
    case EwOp::gelu_f16: {
      const uint16_t* table = detail::gelu_f16_table();
      for (int64_t j = 0; j < n; ++j) d[j] = detail::gelu_f16_f32(a[j], table);
      return;
    }
  }
}

}  // namespace

namespace detail {

void run_program(const ElementwiseProgram& p, const float* const* inputs, float* out, int64_t ld, int64_t r0, int64_t r1,
                 int64_t c0, int64_t c1) {
  alignas(64) float temps[kEwMaxInstrs - 1][kChunk];  // the last instruction writes out directly
  bool row[kEwMaxInputs];
  for (int i = 0; i < p.n_inputs; ++i) row[i] = p.is_row_input(i);
  const float* reg[kEwMaxInputs + kEwMaxInstrs];
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t cc = c0; cc < c1; cc += kChunk) {
      const int64_t len = std::min(kChunk, c1 - cc);
      for (int i = 0; i < p.n_inputs; ++i) reg[i] = row[i] ? inputs[i] + cc : inputs[i] + r * ld + cc;
      for (int i = 0; i < p.n_instrs; ++i) {
        const EwInstr& in = p.instrs[i];
        float* d = i + 1 == p.n_instrs ? out + r * ld + cc : temps[i];
        run_instr(in.op, reg[in.a], is_unary(in.op) ? nullptr : reg[in.b], d, len);
        reg[p.n_inputs + i] = d;
      }
    }
  }
}

void apply_epilogue(const EpilogueArgs& e, float* y, int64_t ld, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const float* inputs[kEwMaxInputs];
  for (int i = 0; i < kEwMaxInputs; ++i) inputs[i] = e.inputs[i];
  inputs[0] = y;
  run_program(*e.program, inputs, y, ld, r0, r1, c0, c1);
}

}  // namespace detail

// Work items are (row, chunk of columns), so a single decode row still spreads over the pool.
void elementwise(const ElementwiseArgs& a, ParallelFor& pf) {
  if (a.rows <= 0 || a.cols <= 0) return;
  const int64_t chunks_per_row = (a.cols + kChunk - 1) / kChunk;
  detail::parallel_for(pf, a.rows * chunks_per_row, kItemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t r = i / chunks_per_row, c0 = (i % chunks_per_row) * kChunk;
      detail::run_program(*a.program, a.inputs, a.out, a.cols, r, r + 1, c0, std::min(a.cols, c0 + kChunk));
    }
  });
}

void matmul_epilogue(const MatmulEpilogueArgs& a, ParallelFor& pf) {
  MatmulArgs mm = a.mm;
  mm.epilogue = &a.epilogue;
  matmul(mm, pf);
}

}  // namespace tessera::kernels::cpu
