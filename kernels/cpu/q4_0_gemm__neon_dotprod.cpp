// neon_dotprod q4_0 x q8_0 tiles on sdot: each weight block's 16 bytes are
// split into their low nibbles (elements 0-15) and high ones (16-31), less
// 8, as int8, and dotted with the x block's two halves; the qx rows'
// correction sums are not needed (the dot is signed x signed).
#include "kernels/cpu/block32_sdot_tile__neon.h"

namespace tessera::kernels::cpu::detail {

namespace {

// q4_0's 16 bytes: low nibbles are elements 0-15, high ones 16-31, each less 8.
struct Q4_0Codes {
  using Block = BlockQ4_0;
  void operator()(const BlockQ4_0& b, int8x16_t& lo, int8x16_t& hi) const {
    const uint8x16_t packed = vld1q_u8(b.qs);
    lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0f))), vdupq_n_s8(8));
    hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), vdupq_n_s8(8));
  }
};

}  // namespace

void q4_0_tile__neon_dotprod(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  block32_sdot(Q4_0Codes{}, x, x_stride, mr, w, nr, k, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
