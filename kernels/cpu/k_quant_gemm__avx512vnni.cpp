// AVX-512 VNNI q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs x q8_K tiles. A weight super-block is
// unpacked once into unsigned codes, 64 per register (one chunk), and each
// x row of the tile then takes two instructions per chunk: vpmaddubsw
// (u8 code x s8 x, pairs summed to i16; at most 2 * 63 * 127 = 16002, so
// it never saturates) and vpdpwssd, which multiplies those pairs by the
// chunk's per-sub-block scales and accumulates in i32. The offsets come from
// the x block sums once per super-block (q8_K_activations.h), and each
// super-block's integer sum is scaled into an f32 accumulator.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/q8_K_activations.h"
#include "kernels/cpu/quant_tile_driver.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Indices for vpermw: i16 lanes 8t..8t+7 take element s + t (t < 4).
inline __m512i quarter_idx(int s) {
  const __m256i quarters = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                                            3, 3, 3, 3, 3, 3, 3);
  return _mm512_add_epi16(_mm512_cvtepu8_epi16(quarters), _mm512_set1_epi16((short)s));
}

// What the q8_K kernels share (quant_tile_driver.h): one weight row a step,
// up to 4 x rows, each x row an array of q8_K blocks.
struct Q8KRows {
  static constexpr int kRows = 1, kMaxMR = 4;
  static constexpr bool kPrefetch = true;
  using XRow = const BlockQ8_K*;
  XRow x_row(const std::byte* row, int64_t) const { return reinterpret_cast<const BlockQ8_K*>(row); }
};

// Chunk c of q4_K: the 32 bytes qs[32c..] as low nibbles (lower half) and high nibbles (upper half).
inline __m512i k4_codes(const BlockQ4_K& blk, int c) {
  const __m256i v = load256(blk.qs + 32 * c);
  return _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1),
                          _mm512_set1_epi8(0x0f));
}

// q5_K: q4_K's nibbles plus 16 where bit 2c (lower half) or 2c+1 (upper half) of qh[l] is set.
inline __m512i k4_codes(const BlockQ5_K& blk, int c) {
  const __m256i v = load256(blk.qs + 32 * c);
  const __m512i nib = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1),
                                       _mm512_set1_epi8(0x0f));
  const __m512i qh = _mm512_broadcast_i64x4(load256(blk.qh));
  const __m512i bit = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi8((char)(1 << (2 * c)))),
                                         _mm256_set1_epi8((char)(1 << (2 * c + 1))), 1);
  return _mm512_mask_add_epi8(nib, _mm512_test_epi8_mask(qh, bit), nib, _mm512_set1_epi8(16));
}

// q4_K / q5_K: per chunk c of 64 codes (sub-blocks 2c, 2c+1) one maddubs
// and one dpwssd by the chunk's scales per x row; the mins from the x block sums.
template <typename B>
struct K4 : Q8KRows {
  using Block = B;
  // The mins get accumulators of their own: two FMAs a super-block into
  // one register would chain their latencies.
  struct Acc {
    __m512 sum, min;
  };
  // Each min repeated for the two 16-element bsums of its sub-block.
  const __m256i dup_mins = _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
  __m512i sc_idx[4];  // chunk c's scale indices (sub-blocks 2c, 2c+1)
  K4() {
    for (int c = 0; c < 4; ++c)
      sc_idx[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)), 1);
  }
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const Block& blk = w[0][b];
    uint32_t sm[4];
    k4_scales_mins(blk.scales, sm);
    const __m256i sm16 = _mm256_cvtepu8_epi16(_mm_setr_epi32((int)sm[0], (int)sm[1], (int)sm[2], (int)sm[3]));
    const __m512i sm16z = _mm512_castsi256_si512(sm16);
    const __m256i mins = _mm256_permutexvar_epi16(dup_mins, sm16);
    __m512i isum[MR];
    for (int i = 0; i < MR; ++i) isum[i] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m512i q = k4_codes(blk, c);
      const __m512i sc = _mm512_permutexvar_epi16(sc_idx[c], sm16z);
      for (int i = 0; i < MR; ++i)
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(q, load512(xr[i][b].qs + 64 * c)), sc);
    }
    const float d = _cvtsh_ss(blk.d), dmin = _cvtsh_ss(blk.dmin);
    for (int i = 0; i < MR; ++i) {
      const __m256i msum = _mm256_madd_epi16(load256(xr[i][b].bsums), mins);
      acc[i].sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_set1_ps(d * xr[i][b].d), acc[i].sum);
      acc[i].min = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(msum)), _mm512_set1_ps(dmin * xr[i][b].d),
                                   acc[i].min);
    }
  }
  void store(const Acc& a, int, float* y) const { *y = _mm512_reduce_add_ps(_mm512_sub_ps(a.sum, a.min)); }
};

struct Q6K : Q8KRows {
  using Block = BlockQ6_K;
  using Acc = __m512;
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  // qh's two bits for chunk A (elements 0-63 of a half) land at bits 4-5
  // after shifting left by 4 (lower 32) or 2 (upper 32); for chunk B (64-127)
  // after shifting right by 0 or 2. 16-bit shifts: bits crossing into the
  // neighbour byte fall outside 0x30.
  const __m512i shl_a = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shr_b = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  const __m512i sc_idx[4] = {quarter_idx(0), quarter_idx(4), quarter_idx(8), quarter_idx(12)};
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const BlockQ6_K& blk = w[0][b];
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
    const __m512i sc16z = _mm512_castsi256_si512(sc16);
    __m512i isum[MR];
    for (int i = 0; i < MR; ++i) {
      // -32 * sum_s sc_s * bsums_s, in i32 lanes 0-7.
      const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(load256(xr[i][b].bsums), sc16), 5);
      isum[i] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(off));
    }
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = load512(blk.ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(load256(blk.qh + 32 * h));
      const __m512i qa = _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(_mm512_sllv_epi16(qh, shl_a), bits45));
      const __m512i qb = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                         _mm512_and_si512(_mm512_srlv_epi16(qh, shr_b), bits45));
      // Chunk A holds sub-blocks 8h..8h+3, B 8h+4..8h+7: 8 i16 pair sums each.
      const __m512i sca = _mm512_permutexvar_epi16(sc_idx[2 * h], sc16z);
      const __m512i scb = _mm512_permutexvar_epi16(sc_idx[2 * h + 1], sc16z);
      for (int i = 0; i < MR; ++i) {
        const int8_t* xq = xr[i][b].qs + 128 * h;
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(qa, load512(xq)), sca);
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(qb, load512(xq + 64)), scb);
      }
    }
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_set1_ps(d * xr[i][b].d), acc[i]);
  }
  void store(const Acc& a, int, float* y) const { *y = _mm512_reduce_add_ps(a); }
};

// q2_K and q3_K: chunk c = 2h + p (elements 64c..64c+63, sub-blocks
// 4c..4c+3) is bits 4p..4p+1 (lower 32) and 4p+2..4p+3 (upper 32) of
// qs[32h..32h+31]; q3_K adds 4 where bit 4h+2p (lower) or 4h+2p+1 (upper)
// of hmask[l] is set. q2_K's 4-bit mins enter through the x block sums, as
// does q3_K's -4 (its codes here are q + 4, 0..7; its scales are signed).
template <typename B>
struct TwoBit : Q8KRows {
  static constexpr bool kQ3 = std::is_same_v<B, BlockQ3_K>;
  using Block = B;
  struct Acc {
    __m512 sum, min;
  };
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  const __m512i sc_idx[4] = {quarter_idx(0), quarter_idx(4), quarter_idx(8), quarter_idx(12)};
  const __m512i shift[2] = {_mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1),
                            _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1)};
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const Block& blk = w[0][b];
    __m256i sc16, mins16 = _mm256_setzero_si256();
    if constexpr (kQ3) {
      uint32_t u[4];
      q3_K_scale_words(blk.scales, u);
      sc16 = _mm256_cvtepi8_epi16(
          _mm_sub_epi8(_mm_setr_epi32((int)u[0], (int)u[1], (int)u[2], (int)u[3]), _mm_set1_epi8(32)));
    } else {
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
      sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0x0f)));
      mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f)));
    }
    const __m512i sc16z = _mm512_castsi256_si512(sc16);
    __m512i isum[MR];
    for (int i = 0; i < MR; ++i) {
      if constexpr (kQ3)  // -4 * sum_s sc_s * bsums_s
        isum[i] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(_mm256_slli_epi32(
                                                                 _mm256_madd_epi16(load256(xr[i][b].bsums), sc16), 2)));
      else
        isum[i] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      const __m512i qs = _mm512_broadcast_i64x4(load256(blk.qs + 32 * h));
      for (int p = 0; p < 2; ++p) {
        __m512i q = _mm512_and_si512(_mm512_srlv_epi16(qs, shift[p]), three);
        if constexpr (kQ3) {
          const __m512i hm = _mm512_broadcast_i64x4(load256(blk.hmask));
          const __m512i bit = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi8((char)(1 << (4 * h + 2 * p)))),
                                                 _mm256_set1_epi8((char)(1 << (4 * h + 2 * p + 1))), 1);
          q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(hm, bit), q, four);
        }
        const int c = 2 * h + p;
        const __m512i sc = _mm512_permutexvar_epi16(sc_idx[c], sc16z);
        for (int i = 0; i < MR; ++i)
          isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(q, load512(xr[i][b].qs + 64 * c)), sc);
      }
    }
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) {
      acc[i].sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_set1_ps(d * xr[i][b].d), acc[i].sum);
      if constexpr (!kQ3) {
        const __m256i msum = _mm256_madd_epi16(load256(xr[i][b].bsums), mins16);
        acc[i].min = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(msum)),
                                     _mm512_set1_ps(_cvtsh_ss(blk.dmin) * xr[i][b].d), acc[i].min);
      }
    }
  }
  void store(const Acc& a, int, float* y) const { *y = _mm512_reduce_add_ps(_mm512_sub_ps(a.sum, a.min)); }
};

// iq4_xs: chunk c of 64 elements (sub-blocks 2c, 2c+1) is qs[32c..32c+31],
// each 16 bytes' low nibbles then high ones. The table values are signed
// (-127..113), so maddubs takes |v| from a table of their magnitudes and x
// negated where v < 0 (nibbles 0-7): pairs at most 2 * 127 * 127, no
// saturation; then vpdpwssd by the sub-block scales ls - 32, as q4_K's.
struct Iq4Xs : Q8KRows {
  using Block = BlockIq4_XS;
  using Acc = __m512;
  const __m512i low4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  const __m512i magnitudes = _mm512_broadcast_i32x4(
      _mm_abs_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues))));
  // Nibbles of a chunk's 128-bit lanes [lo 16 bytes, same, hi 16, same]: shift 0, 4, 0, 4.
  const __m512i nibble_shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
  __m512i sc_idx[4];  // chunk c's scale indices (sub-blocks 2c, 2c+1)
  Iq4Xs() {
    for (int c = 0; c < 4; ++c)
      sc_idx[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)), 1);
  }
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const BlockIq4_XS& blk = w[0][b];
    // Scale s: the nibble s of scales_l (little endian) and bits 2s..2s+1 of scales_h, less 32.
    uint32_t sl;
    std::memcpy(&sl, blk.scales_l, 4);
    const __m128i low = _mm_and_si128(
        _mm_srlv_epi16(_mm_cvtepu8_epi16(_mm_shuffle_epi8(_mm_cvtsi32_si128((int)sl),
                                                          _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0))),
                       _mm_setr_epi16(0, 4, 0, 4, 0, 4, 0, 4)),
        _mm_set1_epi16(0x0f));
    const __m128i high = _mm_and_si128(_mm_srlv_epi16(_mm_set1_epi16((short)blk.scales_h), _mm_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14)),
                                       _mm_set1_epi16(3));
    const __m512i sc16z = _mm512_castsi128_si512(_mm_sub_epi16(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi16(32)));
    __m512i isum[MR];
    for (int i = 0; i < MR; ++i) isum[i] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * c)));
      const __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(_mm512_shuffle_i64x2(v, v, 0x50), nibble_shift), low4);
      const __m512i mag = _mm512_shuffle_epi8(magnitudes, nib);
      const __mmask64 neg = _mm512_cmplt_epu8_mask(nib, eight);
      const __m512i sc = _mm512_permutexvar_epi16(sc_idx[c], sc16z);
      for (int i = 0; i < MR; ++i) {
        const __m512i q = load512(xr[i][b].qs + 64 * c);
        const __m512i signed_q = _mm512_mask_sub_epi8(q, neg, _mm512_setzero_si512(), q);
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(mag, signed_q), sc);
      }
    }
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_set1_ps(d * xr[i][b].d), acc[i]);
  }
  void store(const Acc& a, int, float* y) const { *y = _mm512_reduce_add_ps(a); }
};

}  // namespace

void q4_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(K4<BlockQ4_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q5_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(K4<BlockQ5_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q6_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(Q6K{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q2_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(TwoBit<BlockQ2_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q3_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(TwoBit<BlockQ3_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void iq4_xs_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  run_tile(Iq4Xs{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
