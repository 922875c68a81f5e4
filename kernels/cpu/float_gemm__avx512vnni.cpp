// AVX-512 f32/f16/bf16 tiles (weights widened to f32 on the fly, FMA in f32)
// and the vector helpers the other ops use. Tails are masked loads, so any k
// works without a scalar epilogue.
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

enum class W { f32, f16, bf16 };

inline __mmask16 tail_mask(int64_t left) { return (__mmask16)((1u << left) - 1u); }

template <W T>
inline __m512 load_w(const std::byte* row, int64_t j) {
  if constexpr (T == W::f32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + j);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + j));
    if constexpr (T == W::f16)
      return _mm512_cvtph_ps(h);
    else
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <W T>
inline __m512 load_w_tail(const std::byte* row, int64_t j, __mmask16 m) {
  if constexpr (T == W::f32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + j);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + j);
    if constexpr (T == W::f16)
      return _mm512_cvtph_ps(h);
    else
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <W T, int MR, int NR>
void tile(const float* x, int64_t ldx, const std::byte* w, int64_t ws, int64_t k, float* y, int64_t ldy) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();
  int64_t j = 0;
  const char* next_span = reinterpret_cast<const char*>(w) + NR * ws;
  constexpr int kStepBytes = 16 * (T == W::f32 ? 4 : 2);
  for (; j + 16 <= k; j += 16) {
    if constexpr (NR == 4) prefetch_next_span<NR * kStepBytes>(next_span + j / 16 * NR * kStepBytes);
    __m512 wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = load_w<T>(w + r * ws, j);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_loadu_ps(x + i * ldx + j);
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_fmadd_ps(xv, wv[r], acc[i][r]);
    }
  }
  if (j < k) {
    const __mmask16 m = tail_mask(k - j);
    __m512 wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = load_w_tail<T>(w + r * ws, j, m);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + i * ldx + j);
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_fmadd_ps(xv, wv[r], acc[i][r]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) y[i * ldy + r] = _mm512_reduce_add_ps(acc[i][r]);
}

template <W T, int NR>
void rows(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t ws, int64_t k, float* y, int64_t ldy) {
  int i = 0;
  for (; i + 4 <= mr; i += 4) tile<T, 4, NR>(x + i * ldx, ldx, w, ws, k, y + i * ldy, ldy);
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

void f32_tile__avx512vnni(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                          float* y, int64_t ldy) {
  tile_any<W::f32>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

void f16_tile__avx512vnni(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                          float* y, int64_t ldy) {
  tile_any<W::f16>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

void bf16_tile__avx512vnni(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                           float* y, int64_t ldy) {
  tile_any<W::bf16>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

float dot__avx512vnni(const float* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(b + j), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j + 16), _mm512_loadu_ps(b + j + 16), acc1);
  }
  for (; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : tail_mask(n - j);
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + j), _mm512_maskz_loadu_ps(m, b + j), acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

void axpy__avx512vnni(float a, const float* x, float* y, int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : tail_mask(n - j);
    _mm512_mask_storeu_ps(y + j, m,
                          _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, y + j)));
  }
}

void f16_to_f32__avx512vnni(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : tail_mask(n - j);
    _mm512_mask_storeu_ps(dst + j, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + j)));
  }
}

void f32_to_f16__avx512vnni(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : tail_mask(n - j);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(dst + j, m, h);
  }
}

// Round to nearest even; a NaN keeps its top bits, made quiet (core/half.h's f32_to_bf16).
void f32_to_bf16__avx512vnni(const float* src, uint16_t* dst, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : tail_mask(n - j);
    const __m512i x = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src + j));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), one);
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(bias, lsb)), 16);
    const __mmask16 nan =
        _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    _mm256_mask_storeu_epi16(dst + j, m, _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet)));
  }
}

void bf16_to_f32__avx512vnni(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : tail_mask(n - j);
    const __m512i wide = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src + j)), 16);
    _mm512_mask_storeu_ps(dst + j, m, _mm512_castsi512_ps(wide));
  }
}

}  // namespace tessera::kernels::cpu::detail
