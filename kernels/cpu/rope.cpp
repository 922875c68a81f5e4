// Rotary embedding with llama2.c's f32 formulas (the reference uses the same
// ones, so the two agree to the bit). cos/sin are computed once per
// (token, pair) and applied to every head.
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

void rope(const RopeArgs& a, ParallelFor& pf) {
  const RopeParams p = a.p;
  const int half = p.rot_dims / 2;
  const int64_t row = (int64_t)p.n_heads * p.head_dim;
  const bool interleaved = p.layout == RopeLayout::interleaved;
  detail::parallel_for(pf, a.n_tokens, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* xt = a.x + t * row;
      for (int i = 0; i < half; ++i) {
        const float freq = 1.0f / powf(p.theta, (float)(2 * i) / (float)p.rot_dims);
        const float val = (float)a.positions[t] * freq;
        const float c = cosf(val), s = sinf(val);
        const int i0 = interleaved ? 2 * i : i;
        const int i1 = interleaved ? 2 * i + 1 : i + half;
        for (int h = 0; h < p.n_heads; ++h) {
          float* x = xt + (int64_t)h * p.head_dim;
          const float v0 = x[i0], v1 = x[i1];
          x[i0] = v0 * c - v1 * s;
          x[i1] = v0 * s + v1 * c;
        }
      }
    }
  });
}

}  // namespace tessera::kernels::cpu
