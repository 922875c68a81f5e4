// AVX2 q4_1, q5_0, q5_1 and iq4_nl x q8 tiles, ggml's AVX2 vec_dots four
// weight rows at a time: each row's block is decoded once to 32 bytes and
// dotted with up to 2 x rows (16 ymm registers: 2 x 4 accumulators and the
// decoded rows). q4_1, q5_0 and q5_1 codes are unsigned (0..31) and go
// straight into maddubs (31 * 127 * 2 cannot saturate): q5_0's -16 comes
// from the x row's corr lanes, q4_1's and q5_1's min from its s = d * sum(q)
// (isa_kernels.h). iq4_nl's table values are signed, so maddubs takes |v|
// and x with v's sign, as for q8_0 (at most 2 * 127 * 127, no saturation).
#include <cstring>
#include <type_traits>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/quant_tile_driver.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 0x10 in byte j where bit j of the 32-bit qh is set: ggml's bytes_from_bits_32
// (byte j takes qh's byte j / 8; or-ing in every bit but j % 8 leaves 0xff
// exactly where that bit was set), kept to the fifth bit.
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32((int)v), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)),
                                        _mm256_set1_epi64x(-1));
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// quant_tile_driver.h's kernel: 4 weight rows a step, up to 2 x rows.
template <typename B>
struct Block32 {
  using Block = B;
  static constexpr bool kQ5 = std::is_same_v<B, BlockQ5_0> || std::is_same_v<B, BlockQ5_1>;
  static constexpr bool kMin = std::is_same_v<B, BlockQ4_1> || std::is_same_v<B, BlockQ5_1>;
  static constexpr bool kCorr = std::is_same_v<B, BlockQ5_0>;
  static constexpr bool kSigned = std::is_same_v<B, BlockIq4_NL>;
  static constexpr int kRows = 4, kMaxMR = 2;
  static constexpr bool kPrefetch = true;
  using XRow = const std::byte*;
  // q4_1/q5_1's min terms, row r's in lane r of min: m_r * s per block, one
  // FMA for the four rows.
  struct Acc {
    __m256 v[4];
    __m128 min;
  };
  int64_t corr_off, d_off;  // byte offsets of a qx row's corr (or s) and d
  explicit Block32(int64_t nb) : corr_off(nb * 32), d_off(nb * 64) {}
  XRow x_row(const std::byte* row, int64_t) const { return row; }

  template <int MR>
  void step(const BlockRow<Block> (&w)[4], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256i wq[4], wabs[4];
    for (int r = 0; r < 4; ++r) {
      wq[r] = unpack_nibbles(w[r][b].qs);
      if constexpr (kQ5) wq[r] = _mm256_or_si256(wq[r], fifth_bits(w[r][b].qh));
      if constexpr (kSigned) {
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
        wq[r] = _mm256_shuffle_epi8(table, wq[r]);
        wabs[r] = _mm256_sign_epi8(wq[r], wq[r]);
      }
    }
    __m128 mw;
    if constexpr (kMin) mw = halves4<&Block::m>(w, b);
    for (int i = 0; i < MR; ++i) {
      const __m256i q = load256(xr[i] + 32 * b);
      __m256 scale[4];
      block_scales<4>(w, b, reinterpret_cast<const float*>(xr[i] + d_off)[b], scale);
      for (int r = 0; r < 4; ++r) {
        __m256i dot;
        if constexpr (kSigned) dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(q, wq[r])), ones16);
        else dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wq[r], q), ones16);
        if constexpr (kCorr) dot = _mm256_add_epi32(dot, load256(xr[i] + corr_off + 32 * b));
        acc[i].v[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale[r], acc[i].v[r]);
      }
      if constexpr (kMin)
        acc[i].min = _mm_fmadd_ps(_mm_set1_ps(reinterpret_cast<const float*>(xr[i] + corr_off)[b]), mw, acc[i].min);
    }
  }
  void store(const Acc& a, int nr, float* y) const {
    alignas(16) float min[4];
    _mm_store_ps(min, a.min);
    for (int r = 0; r < nr; ++r) y[r] = kMin ? hsum256(a.v[r]) + min[r] : hsum256(a.v[r]);
  }
};

}  // namespace

void q4_1_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(Block32<BlockQ4_1>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void q5_0_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(Block32<BlockQ5_0>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void q5_1_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                     int64_t ldy) {
  run_tile(Block32<BlockQ5_1>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void iq4_nl_tile__avx2(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                       int64_t ldy) {
  run_tile(Block32<BlockIq4_NL>(k / 32), x, x_stride, mr, w, nr, k / 32, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
