// AVX-512 VNNI q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs x q8_K tiles. A weight super-block is
// unpacked once into unsigned codes, 64 per register (one chunk), and each
// x row of the tile then takes two instructions per chunk: vpmaddubsw
// (u8 code x s8 x, pairs summed to i16; at most 2 * 63 * 127 = 16002, so
// it never saturates) and vpdpwssd, which multiplies those pairs by the
// chunk's per-sub-block scales and accumulates in i32. The offsets come from
// the x block sums once per super-block (q8_K_activations.h). For q4_K,
// q5_K and q6_K each output's super-block sums are then added up exactly
// (integers) and take the float steps of k_quant_sums.h, one output per
// lane, so these tiles and the panel kernels (k_quant_panel_gemm__avx512vnni.cpp,
// prefill) give the same bits; q2_K, q3_K and iq4_xs scale each
// super-block's lane sums into an f32 accumulator per lane. This family
// quantizes x itself (quantize_row_K__avx512vnni, below): q4_K/q5_K's x is
// stored in the order their weights unpack to. One x row (decode) takes
// four weight rows a step (FourRows).
#include <array>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/k_quant_sums__avx512vnni.h"
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

// Where a step takes x's codes from: x_chunk(i, c) is x row i's q8_K codes
// 64c..64c+63 of the step's super-block. From memory (each use a load, as a
// memory operand), or from registers holding one x row's four chunks,
// loaded once for the weight rows a decode step takes.
template <int MR>
auto x_in_memory(const Q8KRows::XRow (&xr)[MR], int64_t b) {
  return [&xr, b](int i, int c) { return load512(xr[i][b].qs + 64 * c); };
}
struct XInRegisters {
  __m512i chunk[4];
  explicit XInRegisters(const BlockQ8_K& x)
      : chunk{load512(x.qs), load512(x.qs + 64), load512(x.qs + 128), load512(x.qs + 192)} {}
  __m512i operator()(int, int c) const { return chunk[c]; }
};

// q4_K/q5_K x rows in this family (quantize_row_K__avx512vnni) hold each
// 128 elements in the order one 64-byte load of the weights' packed codes
// unpacks to: low nibbles are elements 0-31 and 64-95, high nibbles 32-63
// and 96-127, so x is stored as [0-31, 64-95, 32-63, 96-127]. One load, one
// shift and two masks give 128 codes; ggml's order would take a 32-byte
// load, a shift, an insert and a mask per 64. The bsums stay in element order.
constexpr bool pairs_order(DType w) { return w == DType::q4_K || w == DType::q5_K; }

// Half h (elements 128h..128h+127) of q4_K: low nibbles (lo) and high (hi)
// of the 64 bytes qs[64h..].
struct K4Codes {
  __m512i lo, hi;
};
inline K4Codes k4_codes(const BlockQ4_K& blk, int h, __m512i low4) {
  const __m512i v = load512(blk.qs + 64 * h);
  return {_mm512_and_si512(v, low4), _mm512_and_si512(_mm512_srli_epi16(v, 4), low4)};
}

// q5_K: q4_K's nibbles plus 16 where the element's bit of qh[l] is set: bit
// 4h (lo's first 32 bytes), 4h + 2 (lo's last 32), 4h + 1 and 4h + 3 (hi's).
inline K4Codes k4_codes(const BlockQ5_K& blk, int h, __m512i low4) {
  const __m512i v = load512(blk.qs + 64 * h);
  const __m512i qh = _mm512_broadcast_i64x4(load256(blk.qh));
  const __m512i sixteen = _mm512_set1_epi8(16);
  auto bits = [](int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi8((char)(1 << a))), _mm256_set1_epi8((char)(1 << b)), 1);
  };
  const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  return {_mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh, bits(4 * h, 4 * h + 2)), lo, sixteen),
          _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh, bits(4 * h + 1, 4 * h + 3)), hi, sixteen)};
}

// A q4_K/q5_K block's first 16 bytes: d, dmin (f16) and the 12 packed
// scale bytes.
inline __m128i k4_head(const void* blk) { return _mm_loadu_si128(static_cast<const __m128i*>(blk)); }

// vpshufb controls spreading scale s(v, L) over 128-bit lane L of vector v
// as i16, from a register holding a row's 8 scales in every lane: as i16
// (i16 source), or as bytes, zero-extended by the control's 0x80 in every
// high byte (u8 source). Tables, not built per call: a decode matmul calls
// a tile per L2 block.
enum class ScaleSource { i16, u8 };
template <typename SubBlockOf>
constexpr std::array<std::array<int8_t, 64>, 4> scale_spread(ScaleSource src, SubBlockOf sub_block) {
  std::array<std::array<int8_t, 64>, 4> ctl{};
  for (int v = 0; v < 4; ++v)
    for (int lane = 0; lane < 4; ++lane)
      for (int j = 0; j < 8; ++j) {
        const int s = sub_block(v, lane);
        ctl[v][16 * lane + 2 * j] = (int8_t)(src == ScaleSource::i16 ? 2 * s : s);
        ctl[v][16 * lane + 2 * j + 1] = (int8_t)(src == ScaleSource::i16 ? 2 * s + 1 : 0x80);
      }
  return ctl;
}
// q4_K/q5_K (u8 scales): vector v = 2h + (hi): lanes 0-1 sub-block 4h + (hi), lanes 2-3 that + 2.
alignas(64) constexpr auto kK4ScaleCtl =
    scale_spread(ScaleSource::u8, [](int v, int lane) { return 4 * (v / 2) + v % 2 + (lane >= 2 ? 2 : 0); });
// q6_K (i8 scales, widened to i16 first): chunk A (v = 0) of a half holds its sub-blocks 0-3 (lane L: L), B (v = 1) 4-7.
alignas(64) constexpr auto kQ6KScaleCtl = scale_spread(ScaleSource::i16, [](int v, int lane) { return 4 * (v % 2) + lane; });
// q4_K/q5_K's mins [m0, m0, m1, m1, ..., m7, m7] as i16 (each for its two
// bsums of 16) from bytes 8-15 of a row's lane.
alignas(32) constexpr std::array<int8_t, 32> kK4MinsCtl = {8,  -128, 8,  -128, 9,  -128, 9,  -128, 10, -128, 10,
                                                           -128, 11, -128, 11, -128, 12, -128, 12, -128, 13, -128,
                                                           13, -128, 14, -128, 14, -128, 15, -128, 15, -128};
inline __m512i load_ctl(const std::array<int8_t, 64>& c) { return _mm512_load_si512(c.data()); }

// q4_K / q5_K: per half h one maddubs and one dpwssd by the sub-block
// scales for lo (sub-blocks 4h, 4h + 2) and for hi (4h + 1, 4h + 3) per x
// row; the mins from the x block sums.
template <typename B>
struct K4 : Q8KRows {
  using Block = B;
  // One output's sum (k_quant_sums__avx512vnni.h: k4_accumulate).
  using Acc = float;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const Block& blk = w[0][b];
    const __m512i sm = k4_scales_mins_lanes(_mm512_broadcast_i32x4(k4_head(&blk)));
    const __m256i mins = _mm256_shuffle_epi8(_mm512_castsi512_si256(sm), _mm256_load_si256(reinterpret_cast<const __m256i*>(kK4MinsCtl.data())));
    __m512i isum[4], msum[4];
    scaled_sums<MR>(blk, sm, x_in_memory(xr, b), isum);
    for (int i = 0; i < 4; ++i) {
      if (i >= MR) isum[i] = msum[i] = _mm512_setzero_si512();
      else msum[i] = _mm512_zextsi256_si512(_mm256_madd_epi16(load256(xr[i][b].bsums), mins));
    }
    // Each row's whole super-block sums, exact, then its float steps.
    // The MR rows' float steps in one vector, lane i row i.
    const __m128 s = _mm_cvtepi32_ps(lane_sums4(isum[0], isum[1], isum[2], isum[3]));
    const __m128 m = _mm_cvtepi32_ps(lane_sums4(msum[0], msum[1], msum[2], msum[3]));
    const __m128 xd = _mm_setr_ps(xr[0][b].d, MR > 1 ? xr[MR > 1 ? 1 : 0][b].d : 0.0f, MR > 2 ? xr[MR > 2 ? 2 : 0][b].d : 0.0f,
                                  MR > 3 ? xr[MR > 3 ? 3 : 0][b].d : 0.0f);
    const __m128 a = _mm_setr_ps(acc[0], MR > 1 ? acc[MR > 1 ? 1 : 0] : 0.0f, MR > 2 ? acc[MR > 2 ? 2 : 0] : 0.0f,
                                 MR > 3 ? acc[MR > 3 ? 3 : 0] : 0.0f);
    const __m128 r = k4_accumulate(a, s, m, _mm_mul_ps(_mm_set1_ps(_cvtsh_ss(blk.d)), xd),
                                   _mm_mul_ps(_mm_set1_ps(_cvtsh_ss(blk.dmin)), xd));
    acc[0] = _mm_cvtss_f32(r);
    if constexpr (MR > 1) acc[MR > 1 ? 1 : 0] = _mm_cvtss_f32(_mm_shuffle_ps(r, r, 1));
    if constexpr (MR > 2) acc[MR > 2 ? 2 : 0] = _mm_cvtss_f32(_mm_shuffle_ps(r, r, 2));
    if constexpr (MR > 3) acc[MR > 3 ? 3 : 0] = _mm_cvtss_f32(_mm_shuffle_ps(r, r, 3));
  }
  // Each x row's integer sum against one weight super-block, its sub-block
  // scales (sm: k4_scales_mins_lanes in every 128-bit lane) applied, the
  // mins not, in i32 lanes (isum[i], i < MR); x's codes from x_chunk
  // (x_in_memory, XInRegisters).
  template <int MR, typename XChunk>
  void scaled_sums(const Block& blk, __m512i sm, XChunk x_chunk, __m512i* isum) const {
    for (int i = 0; i < MR; ++i) isum[i] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const K4Codes q = k4_codes(blk, h, low4);
      const __m512i sc_lo = _mm512_shuffle_epi8(sm, load_ctl(kK4ScaleCtl[2 * h]));
      const __m512i sc_hi = _mm512_shuffle_epi8(sm, load_ctl(kK4ScaleCtl[2 * h + 1]));
      for (int i = 0; i < MR; ++i) {
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(q.lo, x_chunk(i, 2 * h)), sc_lo);
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(q.hi, x_chunk(i, 2 * h + 1)), sc_hi);
      }
    }
  }
  void store(const Acc& a, int, float* y) const { *y = a; }
};

struct Q6K : Q8KRows {
  using Block = BlockQ6_K;
  using Acc = float;  // one output's sum (k_quant_sums__avx512vnni.h: q6_accumulate)
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  // qh's two bits for chunk A (elements 0-63 of a half) land at bits 4-5
  // after shifting left by 4 (lower 32) or 2 (upper 32); for chunk B (64-127)
  // after shifting right by 0 or 2. 16-bit shifts: bits crossing into the
  // neighbour byte fall outside 0x30.
  const __m512i shl_a = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shr_b = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const BlockQ6_K& blk = w[0][b];
    __m512i isum[4];
    scaled_sums<MR>(blk, b, xr, x_in_memory(xr, b), isum);
    for (int i = MR; i < 4; ++i) isum[i] = _mm512_setzero_si512();
    alignas(16) float s[4];
    _mm_store_ps(s, _mm_cvtepi32_ps(lane_sums4(isum[0], isum[1], isum[2], isum[3])));
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) acc[i] = q6_accumulate(acc[i], s[i], d * xr[i][b].d);
  }
  // Each x row's integer sum against one weight super-block, in i32 lanes
  // (isum[i], i < MR); x's codes from x_chunk
  // (x_in_memory, XInRegisters).
  template <int MR, typename XChunk>
  void scaled_sums(const BlockQ6_K& blk, int64_t b, const XRow (&xr)[MR], XChunk x_chunk, __m512i* isum) const {
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
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
      const __m512i sc_h = _mm512_broadcast_i32x4(h == 0 ? _mm256_castsi256_si128(sc16) : _mm256_extracti128_si256(sc16, 1));
      const __m512i sca = _mm512_shuffle_epi8(sc_h, load_ctl(kQ6KScaleCtl[0]));
      const __m512i scb = _mm512_shuffle_epi8(sc_h, load_ctl(kQ6KScaleCtl[1]));
      for (int i = 0; i < MR; ++i) {
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(qa, x_chunk(i, 2 * h)), sca);
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(qb, x_chunk(i, 2 * h + 1)), scb);
      }
    }
  }
  void store(const Acc& a, int, float* y) const { *y = a; }
};

// q6_K for one x row, four weight rows a step: Q6K's integer sums per row
// (x's codes loaded once for the four), their lane sums taken together and
// the four rows' float steps in one vector, lane r row r: Q6K's bits.
struct Q6KRows4 : Q6K {
  static constexpr int kRows = 4, kMaxMR = 1;
  struct Acc {
    __m128 sum;
  };
  template <int MR>
  void step(const BlockRow<Block> (&w)[4], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    static_assert(MR == 1);
    const XInRegisters x(xr[0][b]);
    __m512i isum[4][1];
    for (int r = 0; r < 4; ++r) Q6K::scaled_sums<1>(w[r][b], b, xr, x, isum[r]);
    const __m128 s = _mm_cvtepi32_ps(lane_sums4(isum[0][0], isum[1][0], isum[2][0], isum[3][0]));
    const float xd = xr[0][b].d;
    const __m128 dd = _mm_setr_ps(_cvtsh_ss(w[0][b].d) * xd, _cvtsh_ss(w[1][b].d) * xd, _cvtsh_ss(w[2][b].d) * xd,
                                  _cvtsh_ss(w[3][b].d) * xd);
    acc[0].sum = q6_accumulate(acc[0].sum, s, dd);
  }
  void store(const Acc& a, int nr, float* y) const {
    alignas(16) float v[4];
    _mm_store_ps(v, a.sum);
    for (int r = 0; r < nr; ++r) y[r] = v[r];
  }
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
    step_from<MR>(w, b, xr, acc, x_in_memory(xr, b));
  }
  // step with x's codes from x_chunk (x_in_memory, XInRegisters).
  template <int MR, typename XChunk>
  void step_from(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR], XChunk x_chunk) const {
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
          isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(q, x_chunk(i, c)), sc);
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
    step_from<MR>(w, b, xr, acc, x_in_memory(xr, b));
  }
  // step with x's codes from x_chunk (x_in_memory, XInRegisters).
  template <int MR, typename XChunk>
  void step_from(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR], XChunk x_chunk) const {
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
        const __m512i q = x_chunk(i, c);
        const __m512i signed_q = _mm512_mask_sub_epi8(q, neg, _mm512_setzero_si512(), q);
        isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(mag, signed_q), sc);
      }
    }
    const float d = _cvtsh_ss(blk.d);
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_set1_ps(d * xr[i][b].d), acc[i]);
  }
  void store(const Acc& a, int, float* y) const { *y = _mm512_reduce_add_ps(a); }
};

// q4_K / q5_K for one x row, four weight rows a step: K4's integer sums
// per row, with what K4 does per row in scalars done once for the four in
// vectors: the scales unpacked (one row per 128-bit lane), d and dmin
// converted and multiplied by x's d (one f16x8 conversion), and the mins
// summed two rows to a register. Each lane takes the same operations as in
// K4, so the bits are K4's.
template <typename B>
struct K4Rows4 : K4<B> {
  using Block = B;
  using XRow = typename K4<B>::XRow;
  static constexpr int kRows = 4, kMaxMR = 1;
  struct Acc {
    __m128 sum;  // lane r: row r
  };
  template <int MR>
  void step(const BlockRow<Block> (&w)[4], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    static_assert(MR == 1);
    __m512i heads = _mm512_castsi128_si512(k4_head(&w[0][b]));
    heads = _mm512_inserti32x4(heads, k4_head(&w[1][b]), 1);
    heads = _mm512_inserti32x4(heads, k4_head(&w[2][b]), 2);
    heads = _mm512_inserti32x4(heads, k4_head(&w[3][b]), 3);
    const __m512i sm4 = k4_scales_mins_lanes(heads);
    // [d0 dmin0 d1 dmin1 d2 dmin2 d3 dmin3] * x's d, as K4's scalar products.
    const __m512i first_dwords = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256 dd = _mm256_mul_ps(_mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi32(first_dwords, heads))),
                                    _mm256_set1_ps(xr[0][b].d));
    // Row r's lane everywhere. Spelled out: the shuffle's immediate must be a
    // literal, which r * 0x55 is only once the loop is unrolled (not at -O0
    // or under the sanitizers).
    const __m512i lane[4] = {_mm512_shuffle_i32x4(sm4, sm4, 0x00), _mm512_shuffle_i32x4(sm4, sm4, 0x55),
                             _mm512_shuffle_i32x4(sm4, sm4, 0xaa), _mm512_shuffle_i32x4(sm4, sm4, 0xff)};
    // x's codes loaded once for the four rows (as memory operands they were
    // loaded per row, and a q8_K block's codes straddle cache lines).
    const XInRegisters x(xr[0][b]);
    __m512i isum[4][1], msum[4];
    for (int r = 0; r < 4; ++r) K4<B>::template scaled_sums<1>(w[r][b], lane[r], x, isum[r]);
    // Each row's mins as i16 against the bsums.
    const __m256i mins_ctl = _mm256_load_si256(reinterpret_cast<const __m256i*>(kK4MinsCtl.data()));
    const __m256i bsums = load256(xr[0][b].bsums);
    for (int r = 0; r < 4; ++r)
      msum[r] = _mm512_zextsi256_si512(_mm256_madd_epi16(bsums, _mm256_shuffle_epi8(_mm512_castsi512_si256(lane[r]), mins_ctl)));
    const __m128 s = _mm_cvtepi32_ps(lane_sums4(isum[0][0], isum[1][0], isum[2][0], isum[3][0]));
    const __m128 m = _mm_cvtepi32_ps(lane_sums4(msum[0], msum[1], msum[2], msum[3]));
    const __m128 d = _mm256_castps256_ps128(_mm256_permutevar8x32_ps(dd, _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0)));
    const __m128 dmin = _mm256_castps256_ps128(_mm256_permutevar8x32_ps(dd, _mm256_setr_epi32(1, 3, 5, 7, 0, 0, 0, 0)));
    acc[0].sum = k4_accumulate(acc[0].sum, s, m, d, dmin);
  }
  void store(const Acc& a, int nr, float* y) const {
    alignas(16) float v[4];
    _mm_store_ps(v, a.sum);
    for (int r = 0; r < nr; ++r) y[r] = v[r];
  }
};

// One x row (decode) takes four weight rows a step: four streams of weight
// blocks in flight instead of one, which kept two threads of a 4096 x 14336
// q4_K GEMV closer to the read roof (0.63 -> 0.70 of it, medians of 40
// paired runs). Each output takes the same steps as in K's own passes, so
// its bits do not change with the x-row count. K has step_from, so x's
// codes are loaded once for the four rows.
template <typename K>
struct FourRows : K {
  using Block = typename K::Block;
  using XRow = typename K::XRow;
  static constexpr int kRows = 4, kMaxMR = 1;
  struct Acc {
    typename K::Acc a[4];
  };
  template <int MR>
  void step(const BlockRow<Block> (&w)[4], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    const XInRegisters x(xr[0][b]);
    for (int r = 0; r < 4; ++r) {
      const BlockRow<Block> one[1] = {w[r]};
      typename K::Acc a1[1] = {acc[0].a[r]};
      K::template step_from<1>(one, b, xr, a1, x);
      acc[0].a[r] = a1[0];
    }
  }
  void store(const Acc& a, int nr, float* y) const {
    for (int r = 0; r < nr; ++r) K::store(a.a[r], 1, y + r);
  }
};

template <typename K, typename Decode = FourRows<K>>
void run_k_tile(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                int64_t ldy) {
  if (mr == 1) return run_tile(Decode{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
  run_tile(K{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

}  // namespace

// quantize_row_q8_K with AVX-512 (bit for bit: the same d, 1 / d and
// round-to-nearest-even, vcvtps2dq under the default rounding mode), then
// q4_K/q5_K's element order. Decode quantizes its one x row on one thread
// before the matmul's threads start; the portable loop took 21 us of a
// 14336-wide row, 3 % of a 4096-row q4_K GEMV.
void quantize_row_K__avx512vnni(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  auto* blocks = reinterpret_cast<BlockQ8_K*>(row);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / kQK_K; ++b, x += kQK_K) {
    __m512 amax = _mm512_setzero_ps();
    for (int j = 0; j < kQK_K; j += 16) amax = _mm512_max_ps(amax, _mm512_andnot_ps(sign, _mm512_loadu_ps(x + j)));
    const float m = _mm512_reduce_max_ps(amax);
    BlockQ8_K& out = blocks[b];
    out.d = m / 127.0f;
    const __m512 inv = _mm512_set1_ps(m > 0.0f ? 127.0f / m : 0.0f);
    for (int s = 0; s < kQK_K / 16; ++s) {
      __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * s), inv));
      q = _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qs + 16 * s), _mm512_cvtepi32_epi8(q));
      out.bsums[s] = (int16_t)_mm512_reduce_add_epi32(q);
    }
    if (!pairs_order(w_dtype)) continue;
    for (int h = 0; h < 2; ++h) {  // swap elements 32-63 and 64-95 of each 128
      int8_t* half = out.qs + 128 * h;
      const __m256i mid_lo = load256(half + 32), mid_hi = load256(half + 64);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(half + 32), mid_hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(half + 64), mid_lo);
    }
  }
}

void q4_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_k_tile<K4<BlockQ4_K>, K4Rows4<BlockQ4_K>>(x, x_stride, mr, w, nr, k, y, ldy);
}

void q5_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_k_tile<K4<BlockQ5_K>, K4Rows4<BlockQ5_K>>(x, x_stride, mr, w, nr, k, y, ldy);
}

void q6_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_k_tile<Q6K, Q6KRows4>(x, x_stride, mr, w, nr, k, y, ldy);
}

void q2_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_k_tile<TwoBit<BlockQ2_K>>(x, x_stride, mr, w, nr, k, y, ldy);
}

void q3_K_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_k_tile<TwoBit<BlockQ3_K>>(x, x_stride, mr, w, nr, k, y, ldy);
}

void iq4_xs_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                             float* y, int64_t ldy) {
  run_k_tile<Iq4Xs>(x, x_stride, mr, w, nr, k, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
