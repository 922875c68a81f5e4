// AVX2 f32/f16/bf16 tiles (F16C widening, FMA in f32) and the vector
// helpers the other ops use. Tails (k % 8) run in scalar code.
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

enum class W { f32, f16, bf16 };

template <W T>
inline __m256 load_w(const std::byte* row, int64_t j) {
  if constexpr (T == W::f32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + j);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + j));
    if constexpr (T == W::f16)
      return _mm256_cvtph_ps(h);
    else
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <W T>
inline float load_w1(const std::byte* row, int64_t j) {
  if constexpr (T == W::f32) {
    return reinterpret_cast<const float*>(row)[j];
  } else {
    const uint16_t h = reinterpret_cast<const uint16_t*>(row)[j];
    if constexpr (T == W::f16)
      return _cvtsh_ss(h);
    else
      return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128((int)((uint32_t)h << 16))));
  }
}

template <W T, int MR, int NR>
void tile(const float* x, int64_t ldx, const std::byte* w, int64_t ws, int64_t k, float* y, int64_t ldy) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_setzero_ps();
  int64_t j = 0;
  const char* next_span = reinterpret_cast<const char*>(w) + NR * ws;
  constexpr int kStepBytes = 8 * (T == W::f32 ? 4 : 2);
  for (; j + 8 <= k; j += 8) {
    if constexpr (NR == 4) prefetch_next_span<NR * kStepBytes>(next_span + j / 8 * NR * kStepBytes);
    __m256 wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = load_w<T>(w + r * ws, j);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(x + i * ldx + j);
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_fmadd_ps(xv, wv[r], acc[i][r]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int r = 0; r < NR; ++r) {
      float s = hsum256(acc[i][r]);
      for (int64_t t = j; t < k; ++t) s += x[i * ldx + t] * load_w1<T>(w + r * ws, t);
      y[i * ldy + r] = s;
    }
  }
}

template <W T, int NR>
void rows(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t ws, int64_t k, float* y, int64_t ldy) {
  int i = 0;
  for (; i + 2 <= mr; i += 2) tile<T, 2, NR>(x + i * ldx, ldx, w, ws, k, y + i * ldy, ldy);
  for (; i < mr; ++i) tile<T, 1, NR>(x + i * ldx, ldx, w, ws, k, y + i * ldy, ldy);
}

template <W T>
void tile_any(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t ws, int nr, int64_t k, float* y,
              int64_t ldy) {
  if (nr == 4) return rows<T, 4>(x, ldx, mr, w, ws, k, y, ldy);
  for (int r = 0; r < nr; ++r) rows<T, 1>(x, ldx, mr, w + r * ws, ws, k, y + r, ldy);
}

}  // namespace

void f32_tile__avx2(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                    float* y, int64_t ldy) {
  tile_any<W::f32>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

void f16_tile__avx2(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                    float* y, int64_t ldy) {
  tile_any<W::f16>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

void bf16_tile__avx2(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                     float* y, int64_t ldy) {
  tile_any<W::bf16>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

float dot__avx2(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 8), _mm256_loadu_ps(b + j + 8), acc1);
  }
  for (; j + 8 <= n; j += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc0);
  float s = hsum256(_mm256_add_ps(acc0, acc1));
  for (; j < n; ++j) s += a[j] * b[j];
  return s;
}

void axpy__avx2(float a, const float* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(y + j, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
  for (; j < n; ++j) y[j] += a * x[j];
}

void f16_to_f32__avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j))));
  for (; j < n; ++j) dst[j] = _cvtsh_ss(src[j]);
}

void bf16_to_f32__avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j)));
    _mm256_storeu_ps(dst + j, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
  for (; j < n; ++j) dst[j] = load_w1<W::bf16>(reinterpret_cast<const std::byte*>(src), j);
}

// F16C's conversion rounds to nearest even, as core/half.h's.
void f32_to_f16__avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; j < n; ++j) dst[j] = _cvtss_sh(src[j], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

namespace {
// bf16 of 8 floats' bits: round to nearest even; a NaN keeps its top bits, made quiet (core/half.h).
inline __m256i round_bf16(__m256i x) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}
}  // namespace

void f32_to_bf16__avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i r = round_bf16(_mm256_castps_si256(_mm256_loadu_ps(src + j)));
    // packus packs within 128-bit lanes: the permute brings both halves' words together.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), _mm256_castsi256_si128(packed));
  }
  for (; j < n; ++j) {
    const __m256i r = round_bf16(_mm256_castps_si256(_mm256_set1_ps(src[j])));
    dst[j] = (uint16_t)_mm256_extract_epi32(r, 0);
  }
}

}  // namespace tessera::kernels::cpu::detail
