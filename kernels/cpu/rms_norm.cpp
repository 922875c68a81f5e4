// RMS norm with llama2.c's formula: ss = sum(x*x)/dim + eps,
// out = weight * (x / sqrt(ss)); rows split across threads.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

void rms_norm(const RmsNormArgs& a, ParallelFor& pf) {
  const detail::IsaKernels& isa = detail::active_kernels();
  detail::parallel_for(pf, a.rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, a.dim)),
                       [&](int64_t r0, int64_t r1) {
                         for (int64_t r = r0; r < r1; ++r) {
                           const float* x = a.x + r * a.dim;
                           float* out = a.out + r * a.dim;
                           float ss = isa.dot(x, x, a.dim);
                           ss /= (float)a.dim;
                           ss += a.p.eps;
                           const float inv = 1.0f / sqrtf(ss);
                           for (int64_t j = 0; j < a.dim; ++j) out[j] = a.weight[j] * (inv * x[j]);
                         }
                       });
}

// Each head's head_dim values as a row of their own (qwen3's Q/K norms): the
// same arithmetic as rms_norm over rows * heads rows of head_dim.
void head_rms_norm(const HeadRmsNormArgs& a, ParallelFor& pf) {
  rms_norm({a.x, a.weight, a.out, a.rows * a.heads, a.head_dim, a.p}, pf);
}

}  // namespace tessera::kernels::cpu
