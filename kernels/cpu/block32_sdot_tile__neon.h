#pragma once
// The neon_dotprod tile for 32-element blocks whose codes decode to two
// int8x16 halves (q8_0 as they are, q4_0's nibbles less 8), written once.
// y[i][r] for MR x rows and NR weight rows: per block, two sdots give the
// int32 dot in 4 lanes, scaled by d_w * d_x into one f32x4 accumulator per
// output, summed across lanes at the end. Every output takes these steps in
// this order whatever MR and NR are: a row's bits do not depend on m.
// (Internal linkage, as simd_util__neon.h: included by each
// *__neon_dotprod.cpp under its own target flags.)
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__neon.h"

namespace tessera::kernels::cpu::detail {
namespace {

// Decode: a type with
//   using Block;
//   void operator()(const Block& b, int8x16_t& lo, int8x16_t& hi) const;   elements 0-15, 16-31
template <typename Decode, int MR, int NR>
void block32_sdot_tile(const Decode& decode, const std::byte* x, int64_t xs, const QWeightRows& w, int64_t nb,
                       float* y, int64_t ldy) {
  BlockRow<typename Decode::Block> wr[NR];
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
  for (int64_t b = 0; b < nb; ++b) {
    int8x16_t w0[NR], w1[NR];
    float wd[NR];
    for (int r = 0; r < NR; ++r) {
      decode(wr[r][b], w0[r], w1[r]);
      wd[r] = half_to_float(wr[r][b].d);
    }
    for (int i = 0; i < MR; ++i) {
      const int8x16_t x0 = vld1q_s8(xq[i] + b * 32), x1 = vld1q_s8(xq[i] + b * 32 + 16);
      for (int r = 0; r < NR; ++r) {
        const int32x4_t dot = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0[r], x0), w1[r], x1);
        acc[i][r] = vfmaq_n_f32(acc[i][r], vcvtq_f32_s32(dot), wd[r] * xd[i][b]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) y[i * ldy + r] = vaddvq_f32(acc[i][r]);
}

// Four x rows at most: 16 accumulators, 8 weight and 2 x registers of 32.
template <typename Decode, int NR>
void block32_sdot_rows(const Decode& d, const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int64_t nb,
                       float* y, int64_t ldy) {
  switch (mr) {
    case 4: return block32_sdot_tile<Decode, 4, NR>(d, x, xs, w, nb, y, ldy);
    case 3: return block32_sdot_tile<Decode, 3, NR>(d, x, xs, w, nb, y, ldy);
    case 2: return block32_sdot_tile<Decode, 2, NR>(d, x, xs, w, nb, y, ldy);
    case 1: return block32_sdot_tile<Decode, 1, NR>(d, x, xs, w, nb, y, ldy);
    default: break;
  }
}

// The tile entry point (isa_kernels.h's QTileFn) for one format.
template <typename Decode>
void block32_sdot(const Decode& d, const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr,
                  int64_t k, float* y, int64_t ldy) {
  const int64_t nb = k / 32;
  if (nr == 4) return block32_sdot_rows<Decode, 4>(d, x, x_stride, mr, w, nb, y, ldy);
  for (int r = 0; r < nr; ++r) block32_sdot_rows<Decode, 1>(d, x, x_stride, mr, weight_row(w, r), nb, y + r, ldy);
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
