#include <cmath>

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
