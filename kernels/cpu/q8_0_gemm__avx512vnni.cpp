// AVX-512 VNNI q8_0 kernels: the activation quantizer (both of this ISA's
// layouts, isa_kernels.h) and q8_0 x q8_0 tiles.
// dpbusd multiplies unsigned by signed bytes, so each weight block enters as
// q + 128 (one xor) and the accumulator starts from the activation row's
// precomputed -128 * sum(x) lanes: the int32 block sum is exact for every
// byte, -128 included, with no abs/sign work per weight block.
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

// One block of 32 floats to q8 codes (returned) and its scale d.
inline __m256i quantize_block(const float* xb, float* d_out) {
  const __m512 v0 = _mm512_loadu_ps(xb);
  const __m512 v1 = _mm512_loadu_ps(xb + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  *d_out = d;
  const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
  const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
  return _mm256_set_m128i(q1, q0);
}

// Sums of each 4 consecutive codes, as 8 int32 lanes.
inline __m256i lane_sums(__m256i q) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q); }

// q4_0's pair layout (isa_kernels.h): blocks 2p and 2p+1 interleaved by
// halves so that one dpbusd covers half of each, lanes 0-3 for 2p, 4-7 for 2p+1.
void quantize_row_q4_0_pairs(const float* x, int64_t k, std::byte* row) {
  const int64_t nb = k / kQK8_0, pairs = (nb + 1) / 2;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = reinterpret_cast<int32_t*>(row + pairs * 64);
  auto* ds = reinterpret_cast<float*>(row + pairs * 96);
  const __m256i neg_c = _mm256_set1_epi32(-qx_correction(DType::q4_0));
  for (int64_t p = 0; p < pairs; ++p) {
    float d0 = 0.0f, d1 = 0.0f;
    const __m256i q0 = quantize_block(x + 2 * p * kQK8_0, &d0);
    const __m256i q1 = 2 * p + 1 < nb ? quantize_block(x + (2 * p + 1) * kQK8_0, &d1) : _mm256_setzero_si256();
    const __m256i lo = _mm256_permute2x128_si256(q0, q1, 0x20);  // elements 0..15 of both
    const __m256i hi = _mm256_permute2x128_si256(q0, q1, 0x31);  // elements 16..31 of both
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + p * 64), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + p * 64 + 32), hi);
    const __m256i sums = _mm256_add_epi32(lane_sums(lo), lane_sums(hi));
    // lane_sums gives lanes 0-3 from block 2p and 4-7 from 2p+1; adding lo and
    // hi folds each block's two halves onto the same lanes.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + p * 8), _mm256_mullo_epi32(sums, neg_c));
    _mm256_storeu_ps(ds + p * 8, _mm256_set_m128(_mm_set1_ps(d1), _mm_set1_ps(d0)));
  }
}

}  // namespace

void quantize_row__avx512vnni(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  if (w_dtype == DType::q4_0) return quantize_row_q4_0_pairs(x, k, row);
  const int64_t nb = k / kQK8_0;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = const_cast<int32_t*>(qx_corr(row, nb));
  auto* ds = const_cast<float*>(qx_d(row, nb));
  const __m256i neg_c = _mm256_set1_epi32(-qx_correction(w_dtype));
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i q = quantize_block(x + b * kQK8_0, ds + b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kQK8_0), q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + b * 8), _mm256_mullo_epi32(lane_sums(q), neg_c));
  }
}

namespace {

// MR x rows against NR weight rows over all k; acc[i][r] holds 8 partial sums.
template <int MR, int NR>
void q8_0_tile(const std::byte* x, int64_t xs, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  BlockRow<BlockQ8_0> wr[NR];
  block_rows(w, wr);
  const int8_t* xq[MR];
  const int32_t* xc[MR];
  const float* xd[MR];
  for (int i = 0; i < MR; ++i) {
    xq[i] = qx_qs(x + i * xs);
    xc[i] = qx_corr(x + i * xs, nb);
    xd[i] = qx_d(x + i * xs, nb);
  }
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_setzero_ps();
  const __m256i flip = _mm256_set1_epi8((char)0x80);
  // The next NR rows start NR rows' bytes on, in either layout.
  const char* next_span = reinterpret_cast<const char*>(w.base) + NR * nb * (int64_t)sizeof(BlockQ8_0);
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (NR == 4) prefetch_next_span<NR * sizeof(BlockQ8_0)>(next_span + b * NR * (int64_t)sizeof(BlockQ8_0));
    __m256i wq[NR];
    for (int r = 0; r < NR; ++r) {
      wq[r] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[r][b].qs)), flip);
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i] + b * kQK8_0));
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc[i] + b * 8));
      __m256 scale[NR];
      block_scales<NR>(wr, b, xd[i][b], scale);
      for (int r = 0; r < NR; ++r) {
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(c, wq[r], q));
        acc[i][r] = _mm256_fmadd_ps(dot, scale[r], acc[i][r]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) y[i * ldy + r] = hsum256(acc[i][r]);
}

template <int NR>
void q8_0_rows(const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  int i = 0;
  for (; i + 4 <= mr; i += 4) q8_0_tile<4, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
  for (; i + 2 <= mr; i += 2) q8_0_tile<2, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
  for (; i < mr; ++i) q8_0_tile<1, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
}

}  // namespace

void q8_0_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr,
                           int64_t k, float* y, int64_t ldy) {
  const int64_t nb = k / kQK8_0;
  if (nr == 4) return q8_0_rows<4>(x, x_stride, mr, w, nb, y, ldy);
  for (int r = 0; r < nr; ++r) q8_0_rows<1>(x, x_stride, mr, weight_row(w, r), nb, y + r, ldy);
}

}  // namespace tessera::kernels::cpu::detail
