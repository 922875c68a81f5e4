#pragma once
// exp(x) for the portable family, one lane at a time: exp_f32__x86.h's
// formula (Cody-Waite reduction, Cephes' polynomial, 2^n from exponent
// bits), written without FMA (the portable files are built without
// contraction); relative error about 1e-7 for -87.3 <= x <= 88, 0 below
// -87.33 (-inf included). For x <= 88 only. Branch-free, so that loops
// over it vectorize.
#include <cstdint>
#include <cstring>

namespace tessera::kernels::cpu::detail {

inline float exp_f32_portable(float x) {
  const float xc = x < -87.33654f ? -87.33654f : x > 88.0f ? 88.0f : x;
  // Round to nearest by the 1.5 * 2^23 shift (|xc * log2e| < 2^22).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = (p * (r * r) + r) + 1.0f;
  const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return x >= -87.33654f ? y * two_n : 0.0f;
}

}  // namespace tessera::kernels::cpu::detail
