// Element-wise and row-wise ops in plain loops the compiler vectorizes,
// split into chunks of a few cache lines' worth of work per thread.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/ew_math.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

namespace {
constexpr int64_t kElemGrain = 16384;
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kElemGrain / std::max<int64_t>(1, cols)); }

void silu_mul_span(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = detail::silu_f32(gate[i]) * up[i];
}
}  // namespace

void silu_mul(const SiluMulArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.n, kElemGrain,
                       [&](int64_t i0, int64_t i1) { silu_mul_span(a.gate + i0, a.up + i0, a.out + i0, i1 - i0); });
}

void silu_mul_halves(const float* y, int64_t rows, int64_t f, float* out, ParallelFor& pf) {
  // One parallel pass over every row (a pass a row cost a 16-row decode
  // step 16 pool round trips a layer), each piece within a row.
  detail::parallel_for(pf, rows * f, kElemGrain, [&](int64_t i0, int64_t i1) {
    while (i0 < i1) {
      const int64_t r = i0 / f, c = i0 % f, n = std::min(f - c, i1 - i0);
      silu_mul_span(y + r * 2 * f + c, y + r * 2 * f + f + c, out + r * f + c, n);
      i0 += n;
    }
  });
}

void add(const AddArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.n, kElemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) a.out[i] = a.a[i] + a.b[i];
  });
}

void mul(const MulArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.n, kElemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) a.out[i] = a.a[i] * a.b[i];
  });
}

void silu(const UnaryArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.n, kElemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) a.out[i] = detail::silu_f32(a.x[i]);
  });
}

void gelu(const UnaryArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.n, kElemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) a.out[i] = detail::gelu_f32(a.x[i]);
  });
}

namespace detail {
const uint16_t* gelu_f16_table() {
  struct Table {
    uint16_t v[65536];
    Table() {
      for (uint32_t i = 0; i < 65536; ++i) v[i] = f32_to_f16(gelu_f32(f16_to_f32((uint16_t)i)));
    }
  };
  static const Table t;
  return t.v;
}
}  // namespace detail

// gemma2's GeGLU as ggml's CPU computes it (ew_math.h's gelu_f16_f32).
void gelu_mul(const GeluMulArgs& a, ParallelFor& pf) {
  const uint16_t* table = detail::gelu_f16_table();
  detail::parallel_for(pf, a.n, kElemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) a.out[i] = detail::gelu_f16_f32(a.gate[i], table) * a.up[i];
  });
}

void scale(const ScalarOpArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.n, kElemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) a.out[i] = a.x[i] * a.s;
  });
}

// As ggml computes gemma2's final soft-cap: scale by 1/cap, tanh, scale by cap.
void softcap(const ScalarOpArgs& a, ParallelFor& pf) {
  const float inv = 1.0f / a.s;
  detail::parallel_for(pf, a.n, kElemGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) a.out[i] = a.s * tanhf(a.x[i] * inv);
  });
}

void bias_add(const BiasAddArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.rows, row_grain(a.cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < a.cols; ++j) a.out[r * a.cols + j] = a.x[r * a.cols + j] + a.bias[j];
  });
}

// Max-subtracted, divided by the sum, as llama2.c does.
void softmax(const SoftmaxArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.rows, row_grain(a.cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* x = a.x + r * a.cols;
      float max = -INFINITY;
      for (int64_t j = 0; j < a.cols; ++j) max = std::max(max, x[j]);
      float sum = 0.0f;
      for (int64_t j = 0; j < a.cols; ++j) {
        x[j] = expf(x[j] - max);
        sum += x[j];
      }
      for (int64_t j = 0; j < a.cols; ++j) x[j] /= sum;
    }
  });
}

void argmax(const ArgmaxArgs& a, ParallelFor& pf) {
  detail::parallel_for(pf, a.rows, row_grain(a.cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = a.x + r * a.cols;
      int64_t best = 0;
      float best_v = a.cols > 0 ? x[0] : 0.0f;
      for (int64_t j = 1; j < a.cols; ++j) {
        if (x[j] > best_v) {
          best_v = x[j];
          best = j;
        }
      }
      a.out[r] = (int32_t)best;
    }
  });
}

}  // namespace tessera::kernels::cpu
