// Portable q4_0 x q8_0 tile in plain C++ with int32 block sums.
#include "core/half.h"
#include "kernels/cpu/isa_kernels.h"

namespace tessera::kernels::cpu::detail {

void q4_0_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  const int64_t nb = k / kQK4_0;
  for (int i = 0; i < mr; ++i) {
    const std::byte* xr = x + i * x_stride;
    const int8_t* xq = qx_qs(xr);
    const float* xd = qx_d(xr, nb);
    for (int r = 0; r < nr; ++r) {
      const BlockRow<BlockQ4_0> wb{w.base + r * w.row_stride, w.block_stride};
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const int8_t* q = xq + b * kQK4_0;
        // Unpacking first leaves a plain int8 dot the compiler vectorizes.
        int8_t wq[kQK4_0];
        for (int j = 0; j < kQK4_0 / 2; ++j) {
          wq[j] = (int8_t)((wb[b].qs[j] & 0x0f) - 8);
          wq[j + kQK4_0 / 2] = (int8_t)((wb[b].qs[j] >> 4) - 8);
        }
        int32_t s = 0;
        for (int j = 0; j < kQK4_0; ++j) s += (int32_t)wq[j] * q[j];
        acc += (float)s * (f16_to_f32(wb[b].d) * xd[b]);
      }
      y[i * ldy + r] = acc;
    }
  }
}

}  // namespace tessera::kernels::cpu::detail
