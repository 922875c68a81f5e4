#include <cmath>

#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

// In f32 on purpose: these are llama2.c's formulas, and the CPU kernel uses
// the same ones so that both agree to the bit.
void rope(const RopeArgs& a) {
  const RopeParams& p = a.p;
  const int half = p.rot_dims / 2;
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    for (int h = 0; h < p.n_heads; ++h) {
      float* x = a.x + (t * p.n_heads + h) * p.head_dim;
      for (int i = 0; i < half; ++i) {
        const float freq = 1.0f / powf(p.theta, (float)(2 * i) / (float)p.rot_dims);
        const float val = (float)a.positions[t] * freq;
        const float c = cosf(val), s = sinf(val);
        float* x0 = p.layout == RopeLayout::interleaved ? &x[2 * i] : &x[i];
        float* x1 = p.layout == RopeLayout::interleaved ? &x[2 * i + 1] : &x[i + half];
        const float v0 = *x0, v1 = *x1;
        *x0 = v0 * c - v1 * s;
        *x1 = v0 * s + v1 * c;
      }
    }
  }
}

}  // namespace tessera::kernels::reference
