// neon_dotprod q4_0 x q8_0 tiles on sdot: each weight block's 16 bytes are
// split into their low nibbles (elements 0-15) and high ones (16-31), less
// 8, as int8, and dotted with the x block's two halves; the qx rows'
// correction sums are not needed (the dot is signed x signed).
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__neon.h"

namespace tessera::kernels::cpu::detail {

namespace {

// As q8_0_gemm__neon_dotprod.cpp's tile: one f32x4 accumulator per output,
// the same steps in the same order for any MR and NR.
template <int MR, int NR>
void q4_0_tile(const std::byte* x, int64_t xs, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  BlockRow<BlockQ4_0> wr[NR];
  block_rows(w, wr);
  const int8_t* xq[MR];
  const float* xd[MR];
  for (int i = 0; i < MR; ++i) {
    xq[i] = qx_qs(x + i * xs);
    xd[i] = qx_d(x + i * xs, nb);
  }
  float32x4_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = vdupq_n_f32(0.0f);
  const uint8x16_t low4 = vdupq_n_u8(0x0f);
  const int8x16_t eight = vdupq_n_s8(8);
  for (int64_t b = 0; b < nb; ++b) {
    int8x16_t w0[NR], w1[NR];
    float wd[NR];
    for (int r = 0; r < NR; ++r) {
      const uint8x16_t packed = vld1q_u8(wr[r][b].qs);
      w0[r] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, low4)), eight);
      w1[r] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), eight);
      wd[r] = half_to_float(wr[r][b].d);
    }
    for (int i = 0; i < MR; ++i) {
      const int8x16_t x0 = vld1q_s8(xq[i] + b * kQK4_0), x1 = vld1q_s8(xq[i] + b * kQK4_0 + 16);
      for (int r = 0; r < NR; ++r) {
        const int32x4_t dot = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0[r], x0), w1[r], x1);
        acc[i][r] = vfmaq_n_f32(acc[i][r], vcvtq_f32_s32(dot), wd[r] * xd[i][b]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) y[i * ldy + r] = vaddvq_f32(acc[i][r]);
}

template <int NR>
void q4_0_rows(const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  switch (mr) {
    case 4: return q4_0_tile<4, NR>(x, xs, w, nb, y, ldy);
    case 3: return q4_0_tile<3, NR>(x, xs, w, nb, y, ldy);
    case 2: return q4_0_tile<2, NR>(x, xs, w, nb, y, ldy);
    case 1: return q4_0_tile<1, NR>(x, xs, w, nb, y, ldy);
    default: break;
  }
}

}  // namespace

void q4_0_tile__neon_dotprod(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  const int64_t nb = k / kQK4_0;
  if (nr == 4) return q4_0_rows<4>(x, x_stride, mr, w, nb, y, ldy);
  for (int r = 0; r < nr; ++r) q4_0_rows<1>(x, x_stride, mr, weight_row(w, r), nb, y + r, ldy);
}

}  // namespace tessera::kernels::cpu::detail
