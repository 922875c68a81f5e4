// AVX-512 VNNI q4_1, q5_0, q5_1 and iq4_nl x q8 tiles of 4 x rows by 4
// weight rows (q8_0 and q4_0 run on panels instead,
// block32_panel_gemm__avx512vnni.cpp): the 16 code bytes of four weight rows' block
// fill one register, its low nibbles (elements 0-15 of each row) meet x's
// first 16 bytes broadcast to the four 128-bit lanes in one dpbusd and its
// high nibbles (elements 16-31) x's other 16 in another, so lanes 4r..4r+3
// hold row r and each x row costs two dpbusd, a convert and an FMA a block
// for all four rows. The codes are unsigned: q5_0's (q + 16) start from the
// x row's folded -16 * sum(x) lanes, iq4_nl's table values enter as v + 128
// (one vpshufb per half) and start from -128 * sum(x), and q4_1's and
// q5_1's min is one more FMA, m times the x row's folded s lanes
// (isa_kernels.h). A tail tile (nr < 4) repeats row 0 into its empty slots.
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/quant_tile_driver.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// quant_tile_driver.h's kernel: 4 weight rows a step, up to 4 x rows.
template <typename B>
struct Block32 {
  using Block = B;
  static constexpr bool kQ5 = std::is_same_v<B, BlockQ5_0> || std::is_same_v<B, BlockQ5_1>;
  static constexpr bool kMin = std::is_same_v<B, BlockQ4_1> || std::is_same_v<B, BlockQ5_1>;
  static constexpr bool kTable = std::is_same_v<B, BlockIq4_NL>;
  static constexpr int kRows = 4, kMaxMR = 4;
  static constexpr bool kPrefetch = true;
  using XRow = const std::byte*;
  // q4_1/q5_1's min terms get an accumulator of their own: two FMAs a step
  // into one register would chain their latencies.
  struct Acc {
    __m512 sum, min;
  };
  int64_t corr_off, d_off;  // byte offsets of a qx row's corr (or s) and d
  const __m512i low4 = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
  const __m512i spread_lo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m512i spread_hi = _mm512_broadcast_i32x4(_mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m512i bit_of_byte = _mm512_set1_epi64(0x8040201008040201);
  const __m512i table = _mm512_broadcast_i32x4(  // iq4_nl's values + 128
      _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)), _mm_set1_epi8((char)0x80)));
  explicit Block32(int64_t nb) : corr_off(nb * 32), d_off(nb * 64) {}
  XRow x_row(const std::byte* row, int64_t) const { return row; }

  // Lanes 4r..4r+3 of d (and of m) hold row r's f16 d (m) as f32. The f16s
  // are packed with scalar loads and shifts (the empty asm statements keep
  // GCC's SLP vectorizer from moving that onto the vector ports, as
  // simd_util__x86.h's scales4), then widened by one vcvtph2ps and spread
  // by vpermps. q4_1/q5_1 keep d and m side by side: one 4-byte load a row.
  void scales(const BlockRow<Block> (&w)[4], int64_t b, __m512& d, __m512& m) const {
    if constexpr (kMin) {
      uint32_t dm[4];
      for (int r = 0; r < 4; ++r) std::memcpy(&dm[r], &w[r][b].d, 4);
      uint64_t lo = (uint64_t)dm[0] | (uint64_t)dm[1] << 32;
      asm("" : "+r"(lo));
      uint64_t hi = (uint64_t)dm[2] | (uint64_t)dm[3] << 32;
      asm("" : "+r"(hi));
      const __m512 dm8 = _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_set_epi64x((long long)hi, (long long)lo)));
      d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6), dm8);
      m = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7), dm8);
    } else {
      uint64_t lo = (uint64_t)w[0][b].d | (uint64_t)w[1][b].d << 16;
      asm("" : "+r"(lo));
      uint64_t hi = (uint64_t)w[2][b].d << 32 | (uint64_t)w[3][b].d << 48;
      asm("" : "+r"(hi));
      const __m512 d4 = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)(lo | hi))));
      d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), d4);
      m = d;
    }
  }

  // Four rows' 16 bytes at byte offset Off of their block b, row r in 128-bit lane r.
  template <size_t Off>
  static __m512i gather16(const BlockRow<Block> (&w)[4], int64_t b) {
    auto at = [&](int r) { return reinterpret_cast<const __m128i*>(reinterpret_cast<const char*>(&w[r][b]) + Off); };
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu2_m128i(at(1), at(0))), _mm256_loadu2_m128i(at(3), at(2)),
                              1);
  }

  template <int MR>
  void step(const BlockRow<Block> (&w)[4], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const __m512i qs = gather16<offsetof(Block, qs)>(w, b);
    __m512i lo = _mm512_and_si512(qs, low4), hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4);
    if constexpr (kQ5) {
      // Row r's fifth bits: lo byte 16r + j takes bit j of its qh, hi byte
      // 16r + j bit 16 + j: vpshufb spreads qh's bytes (0, 1 for lo; 2, 3
      // for hi) over eight bytes each, vptestmb picks bit j % 8 of each.
      // (16 bytes from qh stay inside the block: qs follows.)
      const __m512i qh = gather16<offsetof(Block, qh)>(w, b);
      lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, spread_lo), bit_of_byte), lo, sixteen);
      hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, spread_hi), bit_of_byte), hi, sixteen);
    }
    if constexpr (kTable) lo = _mm512_shuffle_epi8(table, lo), hi = _mm512_shuffle_epi8(table, hi);
    __m512 sw, mw;
    scales(w, b, sw, mw);
    for (int i = 0; i < MR; ++i) {
      const std::byte* x = xr[i];
      __m512i dot = kMin ? _mm512_setzero_si512() : _mm512_broadcast_i32x4(load128(x + corr_off + 16 * b));
      dot = _mm512_dpbusd_epi32(dot, lo, _mm512_broadcast_i32x4(load128(x + 32 * b)));
      dot = _mm512_dpbusd_epi32(dot, hi, _mm512_broadcast_i32x4(load128(x + 32 * b + 16)));
      const __m512 scale = _mm512_mul_ps(sw, _mm512_set1_ps(reinterpret_cast<const float*>(x + d_off)[b]));
      acc[i].sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[i].sum);
      if constexpr (kMin)
        acc[i].min = _mm512_fmadd_ps(
            _mm512_broadcast_f32x4(_mm_loadu_ps(reinterpret_cast<const float*>(x + corr_off) + 4 * b)), mw, acc[i].min);
    }
  }
  void store(const Acc& a, int nr, float* y) const {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, kMin ? _mm512_add_ps(a.sum, a.min) : a.sum);
    for (int r = 0; r < nr; ++r) y[r] = (lanes[4 * r] + lanes[4 * r + 1]) + (lanes[4 * r + 2] + lanes[4 * r + 3]);
  }
};

}  // namespace

void q4_1_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(Block32<BlockQ4_1>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void q5_0_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(Block32<BlockQ5_0>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void q5_1_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(Block32<BlockQ5_1>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void iq4_nl_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  run_tile(Block32<BlockIq4_NL>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
