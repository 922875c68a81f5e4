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
#include <type_traits>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>

namespace tessera::kernels::cpu::detail {
namespace {

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Decode streams weights from memory faster than the hardware prefetcher
// alone fetches them on this class of machine: while a tile consumes its 4
// rows (one contiguous span), it pulls the next span into L2 at the same
// pace, Bytes per step. Prefetches never fault, so running past the end
// of the weights is harmless.
template <int Bytes>
inline void prefetch_next_span(const char* p) {
  for (int off = 0; off < Bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}

// The f16 scales of four weight rows' block b as f32 lanes 0..3. They are
// gathered with scalar loads and shifts (integer ports) and widened with one
// vcvtph2ps, keeping the vector ports for the dot products; the empty asm
// statements stop GCC's SLP vectorizer from moving the packing back onto
// the vector ports as a longer sequence.
// `Field` picks which f16 of the block (its scale d, or its min m).
template <auto Field, typename Row>
inline __m128 halves4(const Row* rows, int64_t b) {
  uint64_t lo = (uint64_t)(rows[0][b].*Field) | (uint64_t)(rows[1][b].*Field) << 16;
  asm("" : "+r"(lo));
  uint64_t hi = (uint64_t)(rows[2][b].*Field) << 32 | (uint64_t)(rows[3][b].*Field) << 48;
  asm("" : "+r"(hi));
  return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)(lo | hi)));
}

template <typename Row>
inline __m128 scales4(const Row* rows, int64_t b) {
  using Block = std::remove_cvref_t<decltype(rows[0][b])>;
  return halves4<&Block::d>(rows, b);
}

// Lane r of s (r < 4), broadcast to 8 lanes.
template <int R>
inline __m256 lane(__m128 s) {
  if constexpr (R == 0)
    return _mm256_broadcastss_ps(s);
  else
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(s), _mm256_set1_epi32(R));
}

// Per-row, per-block scales d_w * d_x for NR = 4 (vectorized) or NR = 1.
template <int NR, typename Row>
inline void block_scales(const Row* rows, int64_t b, float xd, __m256* out) {
  if constexpr (NR == 4) {
    const __m128 s = _mm_mul_ps(scales4(rows, b), _mm_set1_ps(xd));
    out[0] = lane<0>(s);
    out[1] = lane<1>(s);
    out[2] = lane<2>(s);
    out[3] = lane<3>(s);
  } else {
    for (int r = 0; r < NR; ++r) out[r] = _mm256_set1_ps(_cvtsh_ss(rows[r][b].d) * xd);
  }
}

// q4_0's 16 bytes as 32 unsigned nibbles in element order: the bytes go to
// both 128-bit halves, the upper half shifts right by 4 (bits crossing into
// the neighbour byte are masked off), then the mask keeps the low nibble.
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i shifted = _mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f));
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
