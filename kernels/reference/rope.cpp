#include "kernels/reference/reference.h"
#include "kernels/rope_math.h"

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
        float c, s;
        if (a.table) {
          const float* cs = a.table + ((int64_t)a.positions[t] * half + i) * 2;
          c = cs[0];
          s = cs[1];
        } else {
          rope_cos_sin_scaled(a.positions[t], i, p.rot_dims, p.theta, p.freq_scale,
                              a.freq_factors ? a.freq_factors[i] : 1.0f, c, s);
        }
        float* x0 = p.layout == RopeLayout::interleaved ? &x[2 * i] : &x[i];
        float* x1 = p.layout == RopeLayout::interleaved ? &x[2 * i + 1] : &x[i + half];
        const float v0 = *x0, v1 = *x1;
        *x0 = v0 * c - v1 * s;
        *x1 = v0 * s + v1 * c;
      }
    }
  }
}

void rope_table(const RopeTableArgs& a) {
  const int half = a.p.rot_dims / 2;
  for (int32_t pos = 0; pos < a.p.positions; ++pos)
    for (int i = 0; i < half; ++i) {
      float* cs = a.out + ((int64_t)pos * half + i) * 2;
      rope_cos_sin(pos, i, a.p.rot_dims, a.p.theta, cs[0], cs[1]);
    }
}

}  // namespace tessera::kernels::reference
