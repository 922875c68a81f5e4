#pragma once
// exp(x) on f32 vectors for the neon_dotprod family: exp_f32__x86.h's
// formula (Cody-Waite reduction, Cephes' polynomial, 2^n from exponent
// bits); relative error about 1e-7 for -87.3 <= x <= 88, 0 below -87.33
// (-inf included). For x <= 88 only. Unnamed namespace as simd_util__neon.h.
#include <arm_neon.h>

namespace tessera::kernels::cpu::detail {
namespace {

inline float32x4_t exp_f32x4(float32x4_t x) {
  const float32x4_t xc = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.33654f)), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(xc, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(xc, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  const float32x4_t y = vaddq_f32(vfmaq_f32(r, p, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
  // 2^n from its exponent bits: -126 <= n <= 127 after the clamp.
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  const uint32x4_t live = vcgeq_f32(x, vdupq_n_f32(-87.33654f));
  return vreinterpretq_f32_u32(vandq_u32(live, vreinterpretq_u32_f32(vmulq_f32(y, vreinterpretq_f32_s32(bits)))));
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
