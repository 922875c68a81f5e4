// neon_dotprod q8_0 kernels: the activation quantizer (the shared qx layout
// of isa_kernels.h, bit for bit portable's, since this family leaves q4_1,
// q5_0, q5_1 and iq4_nl to portable's tiles over the same rows) and q8_0 x
// q8_0 tiles on sdot: int8 x int8 summed four at a time into int32 lanes,
// so no offset or sign trick is needed (unlike x86's unsigned x signed dots).
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__neon.h"

namespace tessera::kernels::cpu::detail {

void quantize_row__neon_dotprod(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  const int64_t nb = k / kQK8_0;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = const_cast<int32_t*>(qx_corr(row, nb));
  auto* ds = const_cast<float*>(qx_d(row, nb));
  const bool sums = qx_holds_sums(w_dtype);
  const int32_t neg_c = -qx_correction(w_dtype);
  const int8x16_t ones = vdupq_n_s8(1);
  for (int64_t b = 0; b < nb; ++b) {
    float32x4_t v[8];
    for (int l = 0; l < 8; ++l) v[l] = vld1q_f32(x + b * kQK8_0 + 4 * l);
    float32x4_t m = vabsq_f32(v[0]);
    for (int l = 1; l < 8; ++l) m = vmaxq_f32(m, vabsq_f32(v[l]));
    const float d = vmaxvq_f32(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ds[b] = d;
    // vcvtaq rounds half away from zero, as portable's std::roundf.
    int8x16_t q[2];
    for (int h = 0; h < 2; ++h) {
      int16x8_t lo = vcombine_s16(vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[4 * h + 0], id))),
                                  vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[4 * h + 1], id))));
      int16x8_t hi = vcombine_s16(vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[4 * h + 2], id))),
                                  vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[4 * h + 3], id))));
      q[h] = vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi));
      vst1q_s8(qs + b * kQK8_0 + 16 * h, q[h]);
    }
    // sdot with ones sums each 4 bytes: exactly the corr lanes 0-3 and 4-7.
    const int32x4_t lane_lo = vdotq_s32(vdupq_n_s32(0), q[0], ones);
    const int32x4_t lane_hi = vdotq_s32(vdupq_n_s32(0), q[1], ones);
    if (sums) {  // q4_1, q5_1: s = d * sum(q)
      reinterpret_cast<float*>(corr)[b] = d * (float)vaddvq_s32(vaddq_s32(lane_lo, lane_hi));
    } else {
      vst1q_s32(corr + b * 8, vmulq_n_s32(lane_lo, neg_c));
      vst1q_s32(corr + b * 8 + 4, vmulq_n_s32(lane_hi, neg_c));
    }
  }
}

namespace {

// y[i][r] for MR x rows and NR weight rows: per block, two sdots give the
// int32 dot in 4 lanes, scaled by d_w * d_x into one f32x4 accumulator per
// output, summed across lanes at the end. Every output takes these steps in
// this order whatever MR and NR are: a row's bits do not depend on m.
template <int MR, int NR>
void q8_0_tile(const std::byte* x, int64_t xs, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  BlockRow<BlockQ8_0> wr[NR];
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
      w0[r] = vld1q_s8(wr[r][b].qs);
      w1[r] = vld1q_s8(wr[r][b].qs + 16);
      wd[r] = half_to_float(wr[r][b].d);
    }
    for (int i = 0; i < MR; ++i) {
      const int8x16_t x0 = vld1q_s8(xq[i] + b * kQK8_0), x1 = vld1q_s8(xq[i] + b * kQK8_0 + 16);
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
template <int NR>
void q8_0_rows(const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  switch (mr) {
    case 4: return q8_0_tile<4, NR>(x, xs, w, nb, y, ldy);
    case 3: return q8_0_tile<3, NR>(x, xs, w, nb, y, ldy);
    case 2: return q8_0_tile<2, NR>(x, xs, w, nb, y, ldy);
    case 1: return q8_0_tile<1, NR>(x, xs, w, nb, y, ldy);
    default: break;
  }
}

}  // namespace

void q8_0_tile__neon_dotprod(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  const int64_t nb = k / kQK8_0;
  if (nr == 4) return q8_0_rows<4>(x, x_stride, mr, w, nb, y, ldy);
  for (int r = 0; r < nr; ++r) q8_0_rows<1>(x, x_stride, mr, weight_row(w, r), nb, y + r, ldy);
}

}  // namespace tessera::kernels::cpu::detail
