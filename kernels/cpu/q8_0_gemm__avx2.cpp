// AVX2 q8_0 kernels: the activation quantizer and q8_0 x q8_0 tiles, the
// ggml way: |w| (unsigned, 128 included) times x carrying w's sign through
// maddubs, which cannot saturate because |x| <= 127.
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

void quantize_row__avx2(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  const int64_t nb = k / kQK8_0;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = const_cast<int32_t*>(qx_corr(row, nb));
  auto* ds = const_cast<float*>(qx_d(row, nb));
  const bool sums = qx_holds_sums(w_dtype);
  const __m256i neg_c = _mm256_set1_epi32(-qx_correction(w_dtype));
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    __m256 v[4];
    for (int l = 0; l < 4; ++l) v[l] = _mm256_loadu_ps(x + b * kQK8_0 + 8 * l);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                             _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float d = _mm_cvtss_f32(m4) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    ds[b] = d;
    __m256i i[4];
    for (int l = 0; l < 4; ++l) i[l] = _mm256_cvtps_epi32(_mm256_mul_ps(v[l], id));
    // packs work within 128-bit lanes; the permute puts the 32 bytes back in order.
    const __m256i p16a = _mm256_packs_epi32(i[0], i[1]);
    const __m256i p16b = _mm256_packs_epi32(i[2], i[3]);
    const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
    const __m256i q = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kQK8_0), q);
    const __m256i lane_sums = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
    if (sums) {  // q4_1, q5_1: s = d * sum(q)
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(lane_sums), _mm256_extracti128_si256(lane_sums, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
      reinterpret_cast<float*>(corr)[b] = d * (float)_mm_cvtsi128_si32(s4);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + b * 8), _mm256_mullo_epi32(lane_sums, neg_c));
    }
  }
}

namespace {

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
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_setzero_ps();
  const __m256i ones16 = _mm256_set1_epi16(1);
  // The next NR rows start NR rows' bytes on, in either layout.
  const char* next_span = reinterpret_cast<const char*>(w.base) + NR * nb * (int64_t)sizeof(BlockQ8_0);
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (NR == 4) prefetch_next_span<NR * sizeof(BlockQ8_0)>(next_span + b * NR * (int64_t)sizeof(BlockQ8_0));
    __m256i wq[NR], wabs[NR];
    for (int r = 0; r < NR; ++r) {
      wq[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[r][b].qs));
      wabs[r] = _mm256_sign_epi8(wq[r], wq[r]);
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i] + b * kQK8_0));
      __m256 scale[NR];
      block_scales<NR>(wr, b, xd[i][b], scale);
      for (int r = 0; r < NR; ++r) {
        const __m256i prod16 = _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(q, wq[r]));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(prod16, ones16));
        acc[i][r] = _mm256_fmadd_ps(dot, scale[r], acc[i][r]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) y[i * ldy + r] = hsum256(acc[i][r]);
}

// Two x rows at most: 16 ymm registers hold 2 x 4 accumulators and the weights.
template <int NR>
void q8_0_rows(const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  int i = 0;
  for (; i + 2 <= mr; i += 2) q8_0_tile<2, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
  for (; i < mr; ++i) q8_0_tile<1, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
}

}  // namespace

void q8_0_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr,
                     int64_t k, float* y, int64_t ldy) {
  const int64_t nb = k / kQK8_0;
  if (nr == 4) return q8_0_rows<4>(x, x_stride, mr, w, nb, y, ldy);
  for (int r = 0; r < nr; ++r) q8_0_rows<1>(x, x_stride, mr, weight_row(w, r), nb, y + r, ldy);
}

}  // namespace tessera::kernels::cpu::detail
