// Rotary embedding with llama2.c's f32 formulas (the reference uses the same
// ones, so the two agree to the bit). On the fly, cos/sin are computed once
// per (token, pair) and applied to every head; with the folded table
// (RopeArgs::table) they are read, and each head's pairs run as one
// contiguous loop the compiler vectorizes.
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_util.h"
#include "kernels/rope_math.h"

namespace tessera::kernels::cpu {

namespace {

constexpr int kMaxPairs = 512;  // rot_dims up to 1024; wider heads fall back to the on-the-fly loop

void rope_from_table(const RopeArgs& a, ParallelFor& pf) {
  const RopeParams p = a.p;
  const int half = p.rot_dims / 2;
  const int64_t row = (int64_t)p.n_heads * p.head_dim;
  const bool interleaved = p.layout == RopeLayout::interleaved;
  detail::parallel_for(pf, a.n_tokens, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* cs = a.table + (int64_t)a.positions[t] * half * 2;
      float c[kMaxPairs], s[kMaxPairs];
      for (int i = 0; i < half; ++i) {
        c[i] = cs[2 * i];
        s[i] = cs[2 * i + 1];
      }
      for (int h = 0; h < p.n_heads; ++h) {
        float* x = a.x + t * row + (int64_t)h * p.head_dim;
        if (interleaved) {
          for (int i = 0; i < half; ++i) {
            const float v0 = x[2 * i], v1 = x[2 * i + 1];
            x[2 * i] = v0 * c[i] - v1 * s[i];
            x[2 * i + 1] = v0 * s[i] + v1 * c[i];
          }
        } else {
          float* x1 = x + half;
          for (int i = 0; i < half; ++i) {
            const float v0 = x[i], v1 = x1[i];
            x[i] = v0 * c[i] - v1 * s[i];
            x1[i] = v0 * s[i] + v1 * c[i];
          }
        }
      }
    }
  });
}

}  // namespace

void rope(const RopeArgs& a, ParallelFor& pf) {
  const RopeParams p = a.p;
  const int half = p.rot_dims / 2;
  if (a.table && half <= kMaxPairs) return rope_from_table(a, pf);
  const int64_t row = (int64_t)p.n_heads * p.head_dim;
  const bool interleaved = p.layout == RopeLayout::interleaved;
  detail::parallel_for(pf, a.n_tokens, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* xt = a.x + t * row;
      const float* cs = a.table ? a.table + (int64_t)a.positions[t] * half * 2 : nullptr;
      for (int i = 0; i < half; ++i) {
        float c, s;
        if (cs) {
          c = cs[2 * i];
          s = cs[2 * i + 1];
        } else {
          rope_cos_sin_scaled(a.positions[t], i, p.rot_dims, p.theta, p.freq_scale,
                              a.freq_factors ? a.freq_factors[i] : 1.0f, c, s);
        }
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
