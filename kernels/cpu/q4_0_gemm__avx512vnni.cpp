// AVX-512 VNNI q4_0 x q8_0 tiles on the pair layout (isa_kernels.h): the 16
// bytes of blocks 2p and 2p+1 share one register, their low nibbles meet
// the first halves of both x blocks in one dpbusd and their high nibbles
// the second halves in another, so each conversion and FMA serves two
// blocks. The nibbles are unsigned (q + 8); the accumulator starts from the
// precomputed -8 * sum(x) lanes, which makes every block sum exact.
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

// The f16 scales of block b in four rows, packed in a general register (the
// empty asm statements: see scales4 in simd_util__x86.h).
inline uint64_t pack4_scales(const BlockRow<BlockQ4_0>* rows, int64_t b) {
  uint64_t lo = (uint64_t)rows[0][b].d | (uint64_t)rows[1][b].d << 16;
  asm("" : "+r"(lo));
  uint64_t hi = (uint64_t)rows[2][b].d << 32 | (uint64_t)rows[3][b].d << 48;
  asm("" : "+r"(hi));
  return lo | hi;
}

template <int MR, int NR>
void q4_0_tile(const std::byte* x, int64_t xs, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  const int64_t pairs = (nb + 1) / 2, full_pairs = nb / 2;
  BlockRow<BlockQ4_0> wr[NR];
  block_rows(w, wr);
  const int8_t* xq[MR];
  const int32_t* xc[MR];
  const float* xd[MR];
  for (int i = 0; i < MR; ++i) {
    xq[i] = reinterpret_cast<const int8_t*>(x + i * xs);
    xc[i] = reinterpret_cast<const int32_t*>(x + i * xs + pairs * 64);
    xd[i] = reinterpret_cast<const float*>(x + i * xs + pairs * 96);
  }
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_setzero_ps();
  const __m256i mask = _mm256_set1_epi8(0x0f);

  // One pair of blocks; `tail` marks a last block without a partner.
  auto step = [&](int64_t p, bool tail) {
    const int64_t b = 2 * p;
    __m256i lo[NR], hi[NR];
    for (int r = 0; r < NR; ++r) {
      const __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wr[r][b].qs));
      const __m128i second =
          tail ? _mm_setzero_si128() : _mm_loadu_si128(reinterpret_cast<const __m128i*>(wr[r][b + 1].qs));
      const __m256i v = _mm256_set_m128i(second, first);
      lo[r] = _mm256_and_si256(v, mask);
      hi[r] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    }
    // Weight scales: lanes 0-3 block b of rows 0-3, lanes 4-7 block b+1 (NR = 4).
    __m256 wd;
    if constexpr (NR == 4) {
      const uint64_t s1 = tail ? 0 : pack4_scales(wr, b + 1);
      wd = _mm256_cvtph_ps(_mm_set_epi64x((long long)s1, (long long)pack4_scales(wr, b)));
    } else {
      const float s1 = tail ? 0.0f : _cvtsh_ss(wr[0][b + 1].d);
      wd = _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(_cvtsh_ss(wr[0][b].d)));
    }
    for (int i = 0; i < MR; ++i) {
      const __m256i xlo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i] + p * 64));
      const __m256i xhi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i] + p * 64 + 32));
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc[i] + p * 8));
      const __m256 s = _mm256_mul_ps(wd, _mm256_loadu_ps(xd[i] + p * 8));
      for (int r = 0; r < NR; ++r) {
        const __m256i dot = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(c, lo[r], xlo), hi[r], xhi);
        const __m256 scale =
            NR == 4 ? _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(r, r, r, r, 4 + r, 4 + r, 4 + r, 4 + r)) : s;
        acc[i][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[i][r]);
      }
    }
  };

  // The next NR rows start NR rows' bytes on, in either layout.
  const char* next_span = reinterpret_cast<const char*>(w.base) + NR * nb * (int64_t)sizeof(BlockQ4_0);
  for (int64_t p = 0; p < full_pairs; ++p) {
    if constexpr (NR == 4)
      prefetch_next_span<2 * NR * sizeof(BlockQ4_0)>(next_span + p * 2 * NR * (int64_t)sizeof(BlockQ4_0));
    step(p, false);
  }
  if (pairs > full_pairs) step(full_pairs, true);
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) y[i * ldy + r] = hsum256(acc[i][r]);
}

template <int NR>
void q4_0_rows(const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int64_t nb, float* y, int64_t ldy) {
  int i = 0;
  for (; i + 4 <= mr; i += 4) q4_0_tile<4, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
  for (; i + 2 <= mr; i += 2) q4_0_tile<2, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
  for (; i < mr; ++i) q4_0_tile<1, NR>(x + i * xs, xs, w, nb, y + i * ldy, ldy);
}

}  // namespace

void q4_0_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr,
                           int64_t k, float* y, int64_t ldy) {
  const int64_t nb = k / kQK4_0;
  if (nr == 4) return q4_0_rows<4>(x, x_stride, mr, w, nb, y, ldy);
  for (int r = 0; r < nr; ++r) q4_0_rows<1>(x, x_stride, mr, weight_row(w, r), nb, y + r, ldy);
}

}  // namespace tessera::kernels::cpu::detail
