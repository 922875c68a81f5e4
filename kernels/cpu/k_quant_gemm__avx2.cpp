// AVX2 q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs x q8_K tiles. As the AVX-512 VNNI ones with
// 32 codes per register: vpmaddubsw (u8 code x s8 x, pairs to i16; at most
// 2 * 63 * 127 = 16002, never saturating), then vpmaddwd by the sub-block
// scales into i32. The offsets come from the x block sums once per
// super-block (q8_K_activations.h); each super-block's integer sum is
// scaled into an f32 accumulator.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/q8_K_activations.h"
#include "kernels/cpu/quant_tile_driver.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// i16 lanes 0-7 take signed byte `lo` of v, lanes 8-15 byte `hi`.
inline __m256i pick2_epi16(__m128i v, int lo, int hi) {
  const __m128i idx = _mm_unpacklo_epi64(_mm_set1_epi8((char)lo), _mm_set1_epi8((char)hi));
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(v, idx));
}

// What the q8_K kernels share (quant_tile_driver.h): one weight row a step,
// up to 4 x rows, each x row an array of q8_K blocks.
struct Q8KRows {
  static constexpr int kRows = 1, kMaxMR = 4;
  static constexpr bool kPrefetch = true;
  using XRow = const BlockQ8_K*;
  XRow x_row(const std::byte* row, int64_t) const { return reinterpret_cast<const BlockQ8_K*>(row); }
};

// Chunk c of q4_K: sub-block 2c in lo (low nibbles), 2c+1 in hi.
inline void k4_codes(const BlockQ4_K& blk, int c, __m256i& lo, __m256i& hi) {
  const __m256i v = load256(blk.qs + 32 * c), m = _mm256_set1_epi8(0x0f);
  lo = _mm256_and_si256(v, m);
  hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
}

// q5_K: q4_K's nibbles plus 16 where bit 2c (lo) or 2c+1 (hi) of qh[l] is set.
inline void k4_codes(const BlockQ5_K& blk, int c, __m256i& lo, __m256i& hi) {
  const __m256i v = load256(blk.qs + 32 * c), m = _mm256_set1_epi8(0x0f), qh = load256(blk.qh);
  const __m256i bit_lo = _mm256_set1_epi8((char)(1 << (2 * c))), bit_hi = _mm256_set1_epi8((char)(1 << (2 * c + 1)));
  const __m256i sixteen = _mm256_set1_epi8(16);
  // (qh & bit) == bit is 0xff where set; & 16 keeps the fifth bit.
  lo = _mm256_or_si256(_mm256_and_si256(v, m),
                       _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit_lo), bit_lo), sixteen));
  hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m),
                       _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit_hi), bit_hi), sixteen));
}

// q4_K / q5_K: per chunk c (sub-blocks 2c, 2c+1) a maddubs and a madd by
// the sub-block's scale per 32 codes and x row; the mins from the x block sums.
template <typename B>
struct K4 : Q8KRows {
  using Block = B;
  // The mins get accumulators of their own: two FMAs a super-block into
  // one register would chain their latencies.
  struct Acc {
    __m256 sum, min;
  };
  // Each min repeated for the two 16-element bsums of its sub-block.
  const __m128i dup_mins = _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const Block& blk = w[0][b];
    uint32_t sm[4];
    k4_scales_mins(blk.scales, sm);
    const __m128i sm8 = _mm_setr_epi32((int)sm[0], (int)sm[1], (int)sm[2], (int)sm[3]);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm8, dup_mins));
    __m256i isum[MR];
    for (int i = 0; i < MR; ++i) isum[i] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      __m256i lo, hi;
      k4_codes(blk, c, lo, hi);
      const __m256i sc_lo = _mm256_set1_epi16(k4_byte(sm, 2 * c)), sc_hi = _mm256_set1_epi16(k4_byte(sm, 2 * c + 1));
      for (int i = 0; i < MR; ++i) {
        const int8_t* xq = xr[i][b].qs + 64 * c;
        const __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(xq)), sc_lo);
        const __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(xq + 32)), sc_hi);
        isum[i] = _mm256_add_epi32(isum[i], _mm256_add_epi32(plo, phi));
      }
    }
    const float d = _cvtsh_ss(blk.d), dmin = _cvtsh_ss(blk.dmin);
    for (int i = 0; i < MR; ++i) {
      const __m256i msum = _mm256_madd_epi16(load256(xr[i][b].bsums), mins);
      acc[i].sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_set1_ps(d * xr[i][b].d), acc[i].sum);
      acc[i].min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * xr[i][b].d), acc[i].min);
    }
  }
  void store(const Acc& a, int, float* y) const { *y = hsum256(_mm256_sub_ps(a.sum, a.min)); }
};

struct Q6K : Q8KRows {
  using Block = BlockQ6_K;
  using Acc = __m256;
  const __m256i low4 = _mm256_set1_epi8(0x0f), bits45 = _mm256_set1_epi8(0x30);
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const BlockQ6_K& blk = w[0][b];
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
    __m256i isum[MR];
    for (int i = 0; i < MR; ++i)  // -32 * sum_s sc_s * bsums_s
      isum[i] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                 _mm256_slli_epi32(_mm256_madd_epi16(load256(xr[i][b].bsums), sc16), 5));
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = load256(blk.ql + 64 * h), l1 = load256(blk.ql + 64 * h + 32);
      const __m256i qh = load256(blk.qh + 32 * h);
      // Elements 32t..32t+31 of the half; qh's bit pair 2t moved to bits 4-5
      // (16-bit shifts: bits crossing into the neighbour byte fall outside 0x30).
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)),
          _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(qh, bits45)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                          _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)),
      };
      for (int t = 0; t < 4; ++t) {
        const int s = 8 * h + 2 * t;  // sub-blocks s (elements 0-15) and s+1 (16-31)
        const __m256i sc = pick2_epi16(sc8, s, s + 1);
        for (int i = 0; i < MR; ++i) {
          const __m256i p = _mm256_maddubs_epi16(q[t], load256(xr[i][b].qs + 128 * h + 32 * t));
          isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(p, sc));
        }
      }
    }
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_set1_ps(d * xr[i][b].d), acc[i]);
  }
  void store(const Acc& a, int, float* y) const { *y = hsum256(a); }
};

// q2_K and q3_K: elements 128h + 32j .. +31 (sub-blocks 8h + 2j, +1) are
// bits 2j..2j+1 of qs[32h..32h+31]; q3_K adds 4 where bit 4h + j of
// hmask[l] is set. q2_K's mins and q3_K's -4 enter through the x block sums
// (q3_K's codes here are q + 4, 0..7; its scales are signed).
template <typename B>
struct TwoBit : Q8KRows {
  static constexpr bool kQ3 = std::is_same_v<B, BlockQ3_K>;
  using Block = B;
  struct Acc {
    __m256 sum, min;
  };
  const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const Block& blk = w[0][b];
    __m128i sc8, mins8 = _mm_setzero_si128();
    if constexpr (kQ3) {
      uint32_t u[4];
      q3_K_scale_words(blk.scales, u);
      sc8 = _mm_sub_epi8(_mm_setr_epi32((int)u[0], (int)u[1], (int)u[2], (int)u[3]), _mm_set1_epi8(32));
    } else {
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
      sc8 = _mm_and_si128(packed, _mm_set1_epi8(0x0f));
      mins8 = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f));
    }
    __m256i isum[MR];
    for (int i = 0; i < MR; ++i) {
      if constexpr (kQ3)  // -4 * sum_s sc_s * bsums_s
        isum[i] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                   _mm256_slli_epi32(_mm256_madd_epi16(load256(xr[i][b].bsums), _mm256_cvtepi8_epi16(sc8)), 2));
      else
        isum[i] = _mm256_setzero_si256();
    }
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load256(blk.qs + 32 * h);
      for (int j = 0; j < 4; ++j) {
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), three);
        if constexpr (kQ3) {
          const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * h + j)));
          const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(load256(blk.hmask), bit), bit);
          q = _mm256_add_epi8(q, _mm256_and_si256(set, four));
        }
        const int s = 8 * h + 2 * j;
        const __m256i sc = pick2_epi16(sc8, s, s + 1);
        for (int i = 0; i < MR; ++i) {
          const __m256i prod = _mm256_maddubs_epi16(q, load256(xr[i][b].qs + 128 * h + 32 * j));
          isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(prod, sc));
        }
      }
    }
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) {
      acc[i].sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_set1_ps(d * xr[i][b].d), acc[i].sum);
      if constexpr (!kQ3) {
        const __m256i msum = _mm256_madd_epi16(load256(xr[i][b].bsums), _mm256_cvtepu8_epi16(mins8));
        acc[i].min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(_cvtsh_ss(blk.dmin) * xr[i][b].d),
                                     acc[i].min);
      }
    }
  }
  void store(const Acc& a, int, float* y) const { *y = hsum256(_mm256_sub_ps(a.sum, a.min)); }
};

// iq4_xs: sub-block s (32 elements) is qs[16s..16s+15], low nibbles then
// high ones, looked up in the table of signed values; maddubs takes |v| and
// x with v's sign (pairs at most 2 * 127 * 127, no saturation), vpmaddwd
// the sub-block's scale ls - 32.
struct Iq4Xs : Q8KRows {
  using Block = BlockIq4_XS;
  using Acc = __m256;
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const BlockIq4_XS& blk = w[0][b];
    uint32_t sl;
    std::memcpy(&sl, blk.scales_l, 4);
    const uint32_t sh = blk.scales_h;
    __m256i isum[MR];
    for (int i = 0; i < MR; ++i) isum[i] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      const __m256i v = _mm256_shuffle_epi8(table, unpack_nibbles(blk.qs + 16 * s));
      const __m256i mag = _mm256_sign_epi8(v, v);
      const int ls = (int)(((sl >> (4 * s)) & 0x0f) | (((sh >> (2 * s)) & 3) << 4));
      const __m256i sc = _mm256_set1_epi16((short)(ls - 32));
      for (int i = 0; i < MR; ++i) {
        const __m256i p = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(load256(xr[i][b].qs + 32 * s), v));
        isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(p, sc));
      }
    }
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_set1_ps(d * xr[i][b].d), acc[i]);
  }
  void store(const Acc& a, int, float* y) const { *y = hsum256(a); }
};

}  // namespace

void q4_K_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(K4<BlockQ4_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q5_K_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(K4<BlockQ5_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q6_K_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(Q6K{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q2_K_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(TwoBit<BlockQ2_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q3_K_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(TwoBit<BlockQ3_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void iq4_xs_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                       int64_t ldy) {
  run_tile(Iq4Xs{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
