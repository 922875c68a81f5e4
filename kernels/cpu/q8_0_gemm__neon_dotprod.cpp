// neon_dotprod q8_0 kernels: the activation quantizer (the shared qx layout
// of isa_kernels.h, bit for bit portable's, since this family leaves q4_1,
// q5_0, q5_1 and iq4_nl to portable's tiles over the same rows) and q8_0 x
// q8_0 tiles on sdot: int8 x int8 summed four at a time into int32 lanes,
// so no offset or sign trick is needed (unlike x86's unsigned x signed dots).
#include "kernels/cpu/block32_sdot_tile__neon.h"
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

// q8_0's codes are the int8 halves as they are.
struct Q8_0Codes {
  using Block = BlockQ8_0;
  void operator()(const BlockQ8_0& b, int8x16_t& lo, int8x16_t& hi) const {
    lo = vld1q_s8(b.qs);
    hi = vld1q_s8(b.qs + 16);
  }
};

}  // namespace

void q8_0_tile__neon_dotprod(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  block32_sdot(Q8_0Codes{}, x, x_stride, mr, w, nr, k, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
