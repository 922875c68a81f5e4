#include <cmath>

#include "core/half.h"
#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

// silu(g) * u in f32, with llama2.c's formula.
void silu_mul(const SiluMulArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) {
    const float g = a.gate[i];
    a.out[i] = g * (1.0f / (1.0f + expf(-g))) * a.up[i];
  }
}

void add(const AddArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) a.out[i] = a.a[i] + a.b[i];
}

void mul(const MulArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) a.out[i] = a.a[i] * a.b[i];
}

// x * sigmoid(x), in f64.
void silu(const UnaryArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) {
    const double x = a.x[i];
    a.out[i] = (float)(x / (1.0 + std::exp(-x)));
  }
}

// GELU's tanh approximation (as ggml's gelu), in f64.
void gelu(const UnaryArgs& a) {
  const double sqrt_2_over_pi = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < a.n; ++i) {
    const double x = a.x[i];
    a.out[i] = (float)(0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x))));
  }
}

// ggml's CPU GELU, whose definition is its table: the input rounded to f16,
// ggml_gelu_f32's f32 formula of that (not f64: in the negative tail
// 1 + tanh cancels, and ggml's table holds the f32 result), rounded to f16;
// saturated outside (-10, 10) as ggml does.
void gelu_f16(const UnaryArgs& a) {
  const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
  for (int64_t i = 0; i < a.n; ++i) {
    const float x = a.x[i];
    if (x <= -10.0f) {
      a.out[i] = 0.0f;
    } else if (x >= 10.0f) {
      a.out[i] = x;
    } else {
      const float v = f16_to_f32(f32_to_f16(x));
      const float g = 0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * v * (1.0f + coef_a * v * v)));
      a.out[i] = f16_to_f32(f32_to_f16(g));
    }
  }
}

void gelu_mul(const GeluMulArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) {  // one element at a time: out may alias gate or up
    float g;
    gelu_f16({&a.gate[i], &g, 1});
    a.out[i] = g * a.up[i];
  }
}

// In f32, as ggml_scale: one rounding.
void scale(const ScalarOpArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) a.out[i] = a.x[i] * a.s;
}

// s * tanh(x / s), in f64.
void softcap(const ScalarOpArgs& a) {
  const double cap = a.s;
  for (int64_t i = 0; i < a.n; ++i) a.out[i] = (float)(cap * std::tanh((double)a.x[i] / cap));
}

void bias_add(const BiasAddArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t j = 0; j < a.cols; ++j) a.out[r * a.cols + j] = a.x[r * a.cols + j] + a.bias[j];
}

// Max-subtracted softmax over each row, in f64.
void softmax(const SoftmaxArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    float* x = a.x + r * a.cols;
    double max = -INFINITY;
    for (int64_t j = 0; j < a.cols; ++j) max = x[j] > max ? x[j] : max;
    double sum = 0.0;
    for (int64_t j = 0; j < a.cols; ++j) sum += std::exp((double)x[j] - max);
    for (int64_t j = 0; j < a.cols; ++j) x[j] = (float)(std::exp((double)x[j] - max) / sum);
  }
}

void argmax(const ArgmaxArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.cols;
    int64_t best = 0;
    for (int64_t j = 1; j < a.cols; ++j)
      if (x[j] > x[best]) best = j;
    a.out[r] = (int32_t)best;
  }
}

}  // namespace tessera::kernels::reference
