// neon_dotprod q4_K and q6_K x q8_K tiles on sdot. A weight super-block is
// unpacked once to its 256 unsigned codes (q4_K 0..15, q6_K 0..63: int8 as
// they are) in 16 registers and dotted with each x row of the tile; the
// offsets come from the x rows' block sums (q8_K_activations.h): q4_K's
// mins as dmin * sum_s m_s * sum(x_s), q6_K's -32 as -32 * sum_s sc_s * sum(x_s).
// The sums are exact int32, so a row's result is the same whatever the tile.
// (The other K-quants and iq4_xs run portable's tiles: isa.cpp's table.)
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/q8_K_activations.h"
#include "kernels/cpu/quant_tile_driver.h"
#include "kernels/cpu/simd_util__neon.h"

namespace tessera::kernels::cpu::detail {

namespace {

// quant_tile_driver.h's kernel over q8_K x rows: one weight row a step.
struct Q8KRowsNeon {
  static constexpr int kRows = 1, kMaxMR = 4;
  static constexpr bool kPrefetch = false;
  using XRow = const BlockQ8_K*;
  using Acc = float;
  XRow x_row(const std::byte* row, int64_t) const { return reinterpret_cast<const BlockQ8_K*>(row); }
  void store(const Acc& a, int, float* y) const { *y = a; }
};

// q4_K: y += d * d_x * sum_s sc_s * dot(q_s, x_s) - dmin * d_x * sum_s m_s * sum(x_s)
// over 8 sub-blocks of 32; sub-block 2c is the low nibbles of qs[32c..32c+31], 2c+1 the high ones.
struct Q4KNeon : Q8KRowsNeon {
  using Block = BlockQ4_K;
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const BlockQ4_K& blk = w[0][b];
    uint32_t sm[4];
    k4_scales_mins(blk.scales, sm);
    const uint8x16_t low4 = vdupq_n_u8(0x0f);
    int8x16_t q[16];  // sub-block s: q[2s], q[2s + 1]
    for (int c = 0; c < 4; ++c) {
      const uint8x16_t p0 = vld1q_u8(blk.qs + 32 * c), p1 = vld1q_u8(blk.qs + 32 * c + 16);
      q[4 * c + 0] = vreinterpretq_s8_u8(vandq_u8(p0, low4));
      q[4 * c + 1] = vreinterpretq_s8_u8(vandq_u8(p1, low4));
      q[4 * c + 2] = vreinterpretq_s8_u8(vshrq_n_u8(p0, 4));
      q[4 * c + 3] = vreinterpretq_s8_u8(vshrq_n_u8(p1, 4));
    }
    const float d = half_to_float(blk.d), dmin = half_to_float(blk.dmin);
    for (int i = 0; i < MR; ++i) {
      const BlockQ8_K& xb = xr[i][b];
      int32x4_t sumv = vdupq_n_s32(0);
      int32_t summ = 0;
      for (int s = 0; s < 8; ++s) {
        const int32x4_t dot =
            vdotq_s32(vdotq_s32(vdupq_n_s32(0), q[2 * s], vld1q_s8(xb.qs + 32 * s)), q[2 * s + 1], vld1q_s8(xb.qs + 32 * s + 16));
        sumv = vmlaq_n_s32(sumv, dot, k4_byte(sm, s));
        summ += k4_byte(sm, 8 + s) * (xb.bsums[2 * s] + xb.bsums[2 * s + 1]);
      }
      acc[i] += d * xb.d * (float)vaddvq_s32(sumv) - dmin * xb.d * (float)summ;
    }
  }
};

// q6_K: y += d * d_x * (sum_s sc_s * dot(q_s, x_s) - 32 * sum_s sc_s * sum(x_s))
// over 16 sub-blocks of 16. Element 128h + 32j + l (l < 32) has its low 4
// bits in ql[64h + l] (j = 0, 2: low, high nibble) or ql[64h + 32 + l]
// (j = 1, 3), its top 2 in bits 2j..2j+1 of qh[32h + l].
struct Q6KNeon : Q8KRowsNeon {
  using Block = BlockQ6_K;
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const BlockQ6_K& blk = w[0][b];
    const uint8x16_t low4 = vdupq_n_u8(0x0f), low2 = vdupq_n_u8(0x03);
    int8x16_t q[16];  // sub-block s (elements 16s..16s+15)
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 2; ++t) {  // l = 16t..16t+15
        const uint8x16_t l0 = vld1q_u8(blk.ql + 64 * h + 16 * t), l1 = vld1q_u8(blk.ql + 64 * h + 32 + 16 * t);
        const uint8x16_t hb = vld1q_u8(blk.qh + 32 * h + 16 * t);
        q[8 * h + t] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l0, low4), vshlq_n_u8(vandq_u8(hb, low2), 4)));
        q[8 * h + 2 + t] =
            vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l1, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), low2), 4)));
        q[8 * h + 4 + t] =
            vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), low2), 4)));
        q[8 * h + 6 + t] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4)));
      }
    const float d = half_to_float(blk.d);
    for (int i = 0; i < MR; ++i) {
      const BlockQ8_K& xb = xr[i][b];
      int32x4_t sumv = vdupq_n_s32(0);
      int32_t offset = 0;
      for (int s = 0; s < 16; ++s) {
        sumv = vmlaq_n_s32(sumv, vdotq_s32(vdupq_n_s32(0), q[s], vld1q_s8(xb.qs + 16 * s)), blk.scales[s]);
        offset += blk.scales[s] * xb.bsums[s];
      }
      acc[i] += d * xb.d * (float)(vaddvq_s32(sumv) - 32 * offset);
    }
  }
};

}  // namespace

void q4_K_tile__neon_dotprod(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  run_tile(Q4KNeon{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q6_K_tile__neon_dotprod(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  run_tile(Q6KNeon{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
