#pragma once
// Small NEON helpers shared by the *__neon_dotprod.cpp files. In an unnamed
// namespace on purpose, as simd_util__x86.h: each ISA file compiles them
// under its own target flags (-march=armv8.2-a+dotprod), and internal
// linkage keeps the linker from folding a dotprod copy into portable code
// that must run on an Armv8.0 core (the same reason those files convert
// halves here rather than through core/half.h).
#include <arm_neon.h>

#include <cstdint>

namespace tessera::kernels::cpu::detail {
namespace {

// An f16 bit pattern widened to f32 (FCVTL: exact, as core/half.h's).
inline float half_to_float(uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// Eight f16 bit patterns widened to two f32 vectors.
inline void halves_to_floats(const uint16_t* src, float32x4_t& lo, float32x4_t& hi) {
  const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(src));
  lo = vcvt_f32_f16(vget_low_f16(h));
  hi = vcvt_high_f32_f16(h);
}

// Eight bf16 bit patterns widened to two f32 vectors (bf16 is f32's top half).
inline void bf16s_to_floats(const uint16_t* src, float32x4_t& lo, float32x4_t& hi) {
  const uint16x8_t v = vld1q_u16(src);
  lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16));
  hi = vreinterpretq_f32_u32(vshll_high_n_u16(v, 16));
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
