#pragma once
// Small x86 helpers shared by the *__avx2.cpp and *__avx512vnni.cpp files.
// They sit in an unnamed namespace on purpose: each ISA file compiles them
// under its own target flags, and internal linkage keeps the linker from
// folding an AVX-512 copy into the AVX2 file (the same reason those files use
// intrinsics rather than core/half.h or std:: templates).
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* used as
// pass-through operands, GCC bug 105593); the warnings are about the headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace tessera::kernels::cpu::detail {
namespace {

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
