#include <cmath>

#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

// ss = sum(x*x)/dim + eps; out = weight * (x / sqrt(ss)), in f64.
void rms_norm(const RmsNormArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.dim;
    float* out = a.out + r * a.dim;
    double ss = 0.0;
    for (int64_t j = 0; j < a.dim; ++j) ss += (double)x[j] * x[j];
    const double inv = 1.0 / std::sqrt(ss / (double)a.dim + (double)a.p.eps);
    for (int64_t j = 0; j < a.dim; ++j) out[j] = (float)((double)a.weight[j] * (inv * x[j]));
  }
}

// Each head's head_dim values as a row of their own.
void head_rms_norm(const HeadRmsNormArgs& a) {
  rms_norm({a.x, a.weight, a.out, a.rows * a.heads, a.head_dim, a.p});
}

}  // namespace tessera::kernels::reference
