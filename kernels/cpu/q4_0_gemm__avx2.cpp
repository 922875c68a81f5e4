// AVX2 q4_0 x q8_0 tiles: the unsigned nibbles (q + 8) times x through
// maddubs (15 * 127 * 2 cannot saturate), then the activation row's
// -8 * sum(x) lanes make the block sum exact.
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

template <int MR, int NR>
void q4_0_tile(const std::byte* x, int64_t xs, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  BlockRow<BlockQ4_0> wr[NR];
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
  const __m256i ones16 = _mm256_set1_epi16(1);
  // The next NR rows start NR rows' bytes on, in either layout.
  const char* next_span = reinterpret_cast<const char*>(w.base) + NR * nb * (int64_t)sizeof(BlockQ4_0);
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (NR == 4) prefetch_next_span<NR * sizeof(BlockQ4_0)>(next_span + b * NR * (int64_t)sizeof(BlockQ4_0));
    __m256i wq[NR];
    for (int r = 0; r < NR; ++r) {
      wq[r] = unpack_nibbles(wr[r][b].qs);
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i] + b * kQK4_0));
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc[i] + b * 8));
      __m256 scale[NR];
      block_scales<NR>(wr, b, xd[i][b], scale);
      for (int r = 0; r < NR; ++r) {
        const __m256i sum32 = _mm256_madd_epi16(_mm256_maddubs_epi16(wq[r], q), ones16);
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_add_epi32(sum32, c));
        acc[i][r] = _mm256_fmadd_ps(dot, scale[r], acc[i][r]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) y[i * ldy + r] = hsum256(acc[i][r]);
}

template <int NR>
void q4_0_rows(const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  int i = 0;
  for (; i + 2 <= mr; i += 2) q4_0_tile<2, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
  for (; i < mr; ++i) q4_0_tile<1, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
}

}  // namespace

void q4_0_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr,
                     int64_t k, float* y, int64_t ldy) {
  const int64_t nb = k / kQK4_0;
  if (nr == 4) return q4_0_rows<4>(x, x_stride, mr, w, nb, y, ldy);
  for (int r = 0; r < nr; ++r) q4_0_rows<1>(x, x_stride, mr, weight_row(w, r), nb, y + r, ldy);
}

}  // namespace tessera::kernels::cpu::detail
