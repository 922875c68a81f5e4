// Portable q8_0 kernels: the activation quantizer every ISA's layout shares,
// and a q8_0 x q8_0 tile in plain C++ with int32 block sums.
#include <cmath>

#include "core/half.h"
#include "kernels/cpu/isa_kernels.h"

namespace tessera::kernels::cpu::detail {

void quantize_row__portable(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  const int64_t nb = k / kQK8_0;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = const_cast<int32_t*>(qx_corr(row, nb));
  auto* ds = const_cast<float*>(qx_d(row, nb));
  const int32_t c = qx_correction(w_dtype);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ds[b] = d;
    for (int j = 0; j < kQK8_0; ++j) qs[b * kQK8_0 + j] = (int8_t)std::roundf(xb[j] * id);
    if (qx_holds_sums(w_dtype)) {  // q4_1, q5_1: s = d * sum(q)
      int32_t sum = 0;
      for (int j = 0; j < kQK8_0; ++j) sum += qs[b * kQK8_0 + j];
      reinterpret_cast<float*>(corr)[b] = d * (float)sum;
      continue;
    }
    for (int l = 0; l < 8; ++l) {
      const int8_t* q = qs + b * kQK8_0 + 4 * l;
      corr[b * 8 + l] = -c * (q[0] + q[1] + q[2] + q[3]);
    }
  }
}

void q8_0_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  const int64_t nb = k / kQK8_0;
  for (int i = 0; i < mr; ++i) {
    const std::byte* xr = x + i * x_stride;
    const int8_t* xq = qx_qs(xr);
    const float* xd = qx_d(xr, nb);
    for (int r = 0; r < nr; ++r) {
      const BlockRow<BlockQ8_0> wb{w.base + r * w.row_stride, w.block_stride};
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t s = 0;
        for (int j = 0; j < kQK8_0; ++j) s += (int32_t)wb[b].qs[j] * xq[b * kQK8_0 + j];
        acc += (float)s * (f16_to_f32(wb[b].d) * xd[b]);
      }
      y[i * ldy + r] = acc;
    }
  }
}

}  // namespace tessera::kernels::cpu::detail
