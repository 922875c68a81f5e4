// AVX-512 VNNI q4_K, q5_K and q6_K prefill matmul on 16-row int8 panels
// (matmul.cpp runs it from a threshold of x rows; below it, decode
// included, the tiles of k_quant_gemm__avx512vnni.cpp run).
//
// Layout. Per k-slice of kSliceBlocks super-blocks, a group of 16 weight
// rows is unpacked once into a Panel: codes[b][j] holds, in lane r, row r's
// codes 4j..4j+3 of super-block b as unsigned bytes (q4_K 0..15, q5_K
// 0..31, q6_K q + 32 = 0..63) in the order of this family's q8_K x rows
// (q4_K/q5_K x is stored with each 128's middle 64 swapped,
// q8_K_activations.h, so the panel is too; q6_K's is element order), and
// the per-row numbers widened to a lane each: the sub-block scales as i32,
// q4_K/q5_K's mins two a lane as i16 (mins 2t and 2t + 1, for vpdpwssd
// against x's sums of 32), d and dmin as f32. The x rows then pass over two panels at a time, kMaxMR rows
// a pass, one super-block at a time (its two panels' 8 KiB stay in L1 while
// a block of kBlockRows x rows passes): per sub-block, vpdpbusd of a panel
// vector with an x dword broadcast gives lane r its part of row r's
// sub-block dot, 8 (q4_K/q5_K: 32 codes) or 4 (q6_K: 16) a sub-block, and
// one vpmulld by the scales adds it into an i32 super-block sum; q6_K's
// dots start from -32 * x's sum of the 16 (the codes' offset).
//
// Batch invariance. Every sum above is an exact integer, so lane r ends each
// super-block with exactly the integers the tiles reach for the same x and
// weight row by other routes (sums of their lanes), and both then take
// k_quant_sums__avx512vnni.h's float steps, super-block by super-block from
// zero (the f32 sum travels between slices through y, exactly). A row's
// output bits therefore depend neither on m, nor on its place, nor on
// whether panel or tile ran.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/k_quant_sums__avx512vnni.h"
#include "kernels/cpu/q8_K_activations.h"
#include "kernels/cpu/simd_util__x86.h"
#include "kernels/cpu/transpose__avx512.h"

namespace tessera::kernels::cpu::detail {

namespace {

constexpr int kPanelRows = 16;
// Super-blocks per k-slice: two panels of about 45 KiB in L2.
constexpr int64_t kSliceBlocks = 8;
// x rows per pass: 2 x kMaxMR i32 super-block sums and as many sub-block
// dots in registers, each x broadcast serving both panels.
constexpr int kMaxMR = 6;
// x rows per block: the block's k-slice of x (120 rows x 2.3 KiB) stays in
// L2 while each pair of panels passes over it.
constexpr int64_t kBlockRows = 20 * kMaxMR;

// kSub sub-block scales a super-block: 8 (q4_K, q5_K) or 16 (q6_K).
template <int kSub>
struct Panel {
  alignas(64) uint8_t codes[kSliceBlocks][64][64];
  alignas(64) int32_t scale[kSliceBlocks][kSub][kPanelRows];  // [b][g]: the scale of codes[b][(64 / kSub) * g ...]
  alignas(64) int32_t mins[kSliceBlocks][4][kPanelRows];      // q4_K/q5_K: [t] mins 2t, 2t + 1 as i16
  alignas(64) float d[kSliceBlocks][kPanelRows], dmin[kSliceBlocks][kPanelRows];
};

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// transpose_16x16 (transpose__avx512.h), its 16 vectors stored at out[0..15].
inline void store_transposed_16x16(const __m512i (&in)[16], uint8_t (*out)[64]) {
  __m512i t[16];
  transpose_16x16(in, t);
  for (int j = 0; j < 16; ++j) _mm512_store_si512(out[j], t[j]);
}

// row[r] (16 bytes of row r) to out[t] (lane r = row[r]'s dword t).
inline void transpose_16x4(const __m128i (&row)[16], __m512i (&out)[4]) {
  __m512i z[4];  // rows 4q..4q+3, one a 128-bit lane
  for (int q = 0; q < 4; ++q) {
    z[q] = _mm512_castsi128_si512(row[4 * q]);
    z[q] = _mm512_inserti32x4(z[q], row[4 * q + 1], 1);
    z[q] = _mm512_inserti32x4(z[q], row[4 * q + 2], 2);
    z[q] = _mm512_inserti32x4(z[q], row[4 * q + 3], 3);
  }
  // Lane i (mod 8) takes dword t of lane i % 4 of the first (i % 8 < 4) or second source.
  const __m512i base = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  for (int t = 0; t < 4; ++t) {
    const __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(t));
    out[t] = _mm512_mask_blend_epi32((__mmask16)0xff00, _mm512_permutex2var_epi32(z[0], idx, z[1]),
                                     _mm512_permutex2var_epi32(z[2], idx, z[3]));
  }
}

// Row r of a group (nr rows; the empty slots repeat the last row, their lanes never stored).
template <typename Block>
inline const Block& block_of(const std::byte* w, int64_t row_bytes, int nr, int r, int64_t b) {
  return reinterpret_cast<const Block*>(w + std::min(r, nr - 1) * row_bytes)[b];
}

// Half h (128 elements) of a q4_K/q5_K super-block as two vectors of codes
// in x's order: lo (elements 128h + 0-31, 64-95), hi (32-63, 96-127).
inline void k4_half(const BlockQ4_K& blk, int h, __m512i& lo, __m512i& hi) {
  const __m512i v = load512(blk.qs + 64 * h), low4 = _mm512_set1_epi8(0x0f);
  lo = _mm512_and_si512(v, low4);
  hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
}
// q5_K: plus 16 where the element's bit of qh[l] is set: bit 4h (lo's
// first 32 bytes), 4h + 2 (lo's last 32), 4h + 1 and 4h + 3 (hi's), as
// k_quant_gemm__avx512vnni.cpp's k4_codes.
inline void k4_half(const BlockQ5_K& blk, int h, __m512i& lo, __m512i& hi) {
  const __m512i v = load512(blk.qs + 64 * h), low4 = _mm512_set1_epi8(0x0f);
  const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh)));
  const __m512i sixteen = _mm512_set1_epi8(16);
  auto bits = [](int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi8((char)(1 << a))), _mm256_set1_epi8((char)(1 << b)), 1);
  };
  const __m512i l = _mm512_and_si512(v, low4), u = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  lo = _mm512_mask_add_epi8(l, _mm512_test_epi8_mask(qh, bits(4 * h, 4 * h + 2)), l, sixteen);
  hi = _mm512_mask_add_epi8(u, _mm512_test_epi8_mask(qh, bits(4 * h + 1, 4 * h + 3)), u, sixteen);
}

// The integer part of a super-block, both formats': for each of its kSub
// sub-blocks s, lane r of a dot starts at start[i][s] (zero without starts)
// and takes the vpdpbusd of the sub-block's 64 / kSub code dwords of panel n
// with x row i's, then sum[i][n] += dot times the sub-block's scale. Exact
// integers, the ones the tiles reach.
template <int kSub, int MR, int NP>
inline void subblock_sums(const Panel<kSub>* p, int64_t b, const BlockQ8_K* const (&xb)[MR], const int32_t (*start)[kSub],
                          __m512i (&sum)[MR][NP]) {
  constexpr int kDwords = 64 / kSub;
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < NP; ++n) sum[i][n] = _mm512_setzero_si512();
  for (int s = 0; s < kSub; ++s) {
    __m512i dot[MR][NP];
    for (int i = 0; i < MR; ++i) {
      const __m512i st = start != nullptr ? _mm512_set1_epi32(start[i][s]) : _mm512_setzero_si512();
      for (int n = 0; n < NP; ++n) dot[i][n] = st;
    }
#pragma GCC unroll 8
    for (int jj = 0; jj < kDwords; ++jj) {
      const int j = kDwords * s + jj;
      __m512i wv[NP];
      for (int n = 0; n < NP; ++n) wv[n] = _mm512_load_si512(p[n].codes[b][j]);
      for (int i = 0; i < MR; ++i) {
        const __m512i xv = _mm512_set1_epi32(load_i32(xb[i]->qs + 4 * j));
        for (int n = 0; n < NP; ++n) dot[i][n] = _mm512_dpbusd_epi32(dot[i][n], wv[n], xv);
      }
    }
    for (int n = 0; n < NP; ++n) {
      const __m512i sc = _mm512_load_si512(p[n].scale[b][s]);
      for (int i = 0; i < MR; ++i) sum[i][n] = _mm512_add_epi32(sum[i][n], _mm512_mullo_epi32(dot[i][n], sc));
    }
  }
}

// q4_K, q5_K: 8 sub-blocks of 32 codes (8 dwords); x's dword group g (32
// codes) is sub-block kGroupSub[g] (x's middle-swapped order).
template <typename B>
struct K4Format {
  using Block = B;
  static constexpr int kSub = 8;
  static constexpr int kGroupSub[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  static void unpack(const std::byte* w, int64_t row_bytes, int nr, int64_t b0, int64_t nbs, Panel<kSub>& p) {
    for (int64_t b = 0; b < nbs; ++b) {
      for (int h = 0; h < 2; ++h) {
        __m512i lo[16], hi[16];
        for (int r = 0; r < kPanelRows; ++r) k4_half(block_of<Block>(w, row_bytes, nr, r, b0 + b), h, lo[r], hi[r]);
        store_transposed_16x16(lo, p.codes[b] + 32 * h);
        store_transposed_16x16(hi, p.codes[b] + 32 * h + 16);
      }
      // The 16 rows' heads (d, dmin, 12 packed bytes), unpacked as the tiles
      // do (k4_scales_mins_lanes: 8 scales, 8 mins a row), to a row a lane.
      __m128i head[16], sm[16];
      for (int r = 0; r < kPanelRows; ++r)
        head[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&block_of<Block>(w, row_bytes, nr, r, b0 + b)));
      for (int q = 0; q < 4; ++q) {
        // (Immediates spelled out: a loop index is one only where the loop is unrolled, not in every build.)
        __m512i four = _mm512_castsi128_si512(head[4 * q]);
        four = _mm512_inserti32x4(four, head[4 * q + 1], 1);
        four = _mm512_inserti32x4(four, head[4 * q + 2], 2);
        four = _mm512_inserti32x4(four, head[4 * q + 3], 3);
        const __m512i u = k4_scales_mins_lanes(four);
        sm[4 * q + 0] = _mm512_extracti32x4_epi32(u, 0);
        sm[4 * q + 1] = _mm512_extracti32x4_epi32(u, 1);
        sm[4 * q + 2] = _mm512_extracti32x4_epi32(u, 2);
        sm[4 * q + 3] = _mm512_extracti32x4_epi32(u, 3);
      }
      __m512i hd[4], v[4];  // hd[0]: d | dmin << 16; v[0], v[1]: scales 0-3, 4-7; v[2], v[3]: mins
      transpose_16x4(head, hd);
      transpose_16x4(sm, v);
      for (int g = 0; g < 8; ++g) {
        const int j = kGroupSub[g];
        _mm512_store_si512(p.scale[b][g], _mm512_and_si512(_mm512_srli_epi32(v[j / 4], 8 * (j % 4)), _mm512_set1_epi32(0xff)));
      }
      for (int t = 0; t < 4; ++t) {  // mins 2t, 2t + 1 (bytes 2(t % 2), 2(t % 2) + 1 of v[2 + t / 2]) as two i16
        const int c = 2 * (t % 2);
        const __m512i ctl = _mm512_broadcast_i32x4(_mm_setr_epi8(c, -1, c + 1, -1, c + 4, -1, c + 5, -1, c + 8, -1, c + 9, -1, c + 12, -1, c + 13, -1));
        _mm512_store_si512(p.mins[b][t], _mm512_shuffle_epi8(v[2 + t / 2], ctl));
      }
      _mm512_store_ps(p.d[b], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(hd[0])));
      _mm512_store_ps(p.dmin[b], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(hd[0], 16))));
    }
  }
  template <int MR, int NP>
  static void superblock(const Panel<kSub>* p, int64_t b, const BlockQ8_K* const (&xb)[MR], __m512 (&acc)[MR][NP]) {
    // x's sums of each 32 (at most 32 * 127: i16), dword t = sub-blocks 2t, 2t + 1, against the mins.
    alignas(16) int32_t sums32[MR][4];
    for (int i = 0; i < MR; ++i) {
      const __m256i s16 = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[i]->bsums)), _mm256_set1_epi16(1));
      _mm_store_si128(reinterpret_cast<__m128i*>(sums32[i]), _mm256_cvtepi32_epi16(s16));
    }
    __m512i sum[MR][NP];
    subblock_sums<kSub>(p, b, xb, nullptr, sum);
    for (int i = 0; i < MR; ++i) {
      const __m512 xd = _mm512_set1_ps(xb[i]->d);
      for (int n = 0; n < NP; ++n) {
        __m512i msum = _mm512_setzero_si512();
        for (int t = 0; t < 4; ++t)
          msum = _mm512_dpwssd_epi32(msum, _mm512_load_si512(p[n].mins[b][t]), _mm512_set1_epi32(sums32[i][t]));
        acc[i][n] = k4_accumulate(acc[i][n], _mm512_cvtepi32_ps(sum[i][n]), _mm512_cvtepi32_ps(msum),
                                  _mm512_mul_ps(_mm512_load_ps(p[n].d[b]), xd), _mm512_mul_ps(_mm512_load_ps(p[n].dmin[b]), xd));
      }
    }
  }
};

// q6_K: 16 sub-blocks of 16 codes (4 dwords), element order.
struct Q6KFormat {
  using Block = BlockQ6_K;
  static constexpr int kSub = 16;
  static void unpack(const std::byte* w, int64_t row_bytes, int nr, int64_t b0, int64_t nbs, Panel<kSub>& p) {
    const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
    // As k_quant_gemm__avx512vnni.cpp's Q6K: qh's two bits to bits 4-5.
    const __m512i shl_a = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr_b = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    for (int64_t b = 0; b < nbs; ++b) {
      for (int h = 0; h < 2; ++h) {
        __m512i qa[16], qb[16];
        for (int r = 0; r < kPanelRows; ++r) {
          const Block& blk = block_of<Block>(w, row_bytes, nr, r, b0 + b);
          const __m512i ql = load512(blk.ql + 64 * h);
          const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h)));
          qa[r] = _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(_mm512_sllv_epi16(qh, shl_a), bits45));
          qb[r] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                  _mm512_and_si512(_mm512_srlv_epi16(qh, shr_b), bits45));
        }
        store_transposed_16x16(qa, p.codes[b] + 32 * h);
        store_transposed_16x16(qb, p.codes[b] + 32 * h + 16);
      }
      // The 16 rows' i8 scales to a row a lane, widened; d by scalar loads.
      __m128i sc[16];
      alignas(32) uint16_t d16[kPanelRows];
      for (int r = 0; r < kPanelRows; ++r) {
        const Block& blk = block_of<Block>(w, row_bytes, nr, r, b0 + b);
        sc[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
        d16[r] = blk.d;
      }
      __m512i v[4];  // v[t]: scales 4t..4t+3
      transpose_16x4(sc, v);
      for (int s = 0; s < 16; ++s)
        _mm512_store_si512(p.scale[b][s], _mm512_srai_epi32(_mm512_slli_epi32(v[s / 4], 24 - 8 * (s % 4)), 24));
      _mm512_store_ps(p.d[b], _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d16))));
    }
  }
  template <int MR, int NP>
  static void superblock(const Panel<kSub>* p, int64_t b, const BlockQ8_K* const (&xb)[MR], __m512 (&acc)[MR][NP]) {
    // -32 * x's sum of each 16: where each sub-block's dot starts.
    alignas(64) int32_t start[MR][16];
    for (int i = 0; i < MR; ++i)
      _mm512_store_si512(start[i], _mm512_sub_epi32(_mm512_setzero_si512(),
                                                    _mm512_slli_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256(
                                                                          reinterpret_cast<const __m256i*>(xb[i]->bsums))),
                                                                      5)));
    __m512i sum[MR][NP];
    subblock_sums<kSub>(p, b, xb, start, sum);
    for (int i = 0; i < MR; ++i) {
      const __m512 xd = _mm512_set1_ps(xb[i]->d);
      for (int n = 0; n < NP; ++n)
        acc[i][n] = q6_accumulate(acc[i][n], _mm512_cvtepi32_ps(sum[i][n]), _mm512_mul_ps(_mm512_load_ps(p[n].d[b]), xd));
    }
  }
};

// MR x rows (byte stride xs) over NP panels' super-block b of the slice
// (x's super-block b0 + b); the f32 sums come from y (zero at b0 + b = 0)
// and go back to each panel's columns (mask[n]).
template <typename Format, int MR, int NP>
void panel_pass(const Panel<Format::kSub>* p, int64_t b0, int64_t b, const std::byte* x, int64_t xs,
                const __mmask16* mask, float* y, int64_t ldy) {
  const BlockQ8_K* xb[MR];
  for (int i = 0; i < MR; ++i) xb[i] = reinterpret_cast<const BlockQ8_K*>(x + i * xs) + b0 + b;
  __m512 acc[MR][NP];
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < NP; ++n)
      acc[i][n] = b0 + b == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[n], y + i * ldy + kPanelRows * n);
  Format::template superblock<MR, NP>(p, b, xb, acc);
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < NP; ++n) _mm512_mask_storeu_ps(y + i * ldy + kPanelRows * n, mask[n], acc[i][n]);
}

// The passes of fewer than kMaxMR rows, one instantiation per count.
template <typename Format, int MR, int NP>
void tail_pass(int rem, const Panel<Format::kSub>* p, int64_t b0, int64_t b, const std::byte* x, int64_t xs,
               const __mmask16* mask, float* y, int64_t ldy) {
  if constexpr (MR >= 1) {
    if (rem == MR) return panel_pass<Format, MR, NP>(p, b0, b, x, xs, mask, y, ldy);
    tail_pass<Format, MR - 1, NP>(rem, p, b0, b, x, xs, mask, y, ldy);
  }
}

template <typename Format, int NP>
void passes(const Panel<Format::kSub>* p, int64_t b0, int64_t nbs, const std::byte* x, int64_t xs, int64_t m0,
            int64_t m1, const __mmask16* mask, float* y, int64_t ldy) {
  for (int64_t b = 0; b < nbs; ++b) {
    int64_t i = m0;
    for (; i + kMaxMR <= m1; i += kMaxMR) panel_pass<Format, kMaxMR, NP>(p, b0, b, x + i * xs, xs, mask, y + i * ldy, ldy);
    if (i < m1) tail_pass<Format, kMaxMR - 1, NP>((int)(m1 - i), p, b0, b, x + i * xs, xs, mask, y + i * ldy, ldy);
  }
}

template <typename Format>
void panel_gemm(const std::byte* x, int64_t xs, int64_t m, const std::byte* w, int64_t row_bytes, int64_t n, int64_t k,
                float* y, int64_t ldy) {
  const int64_t nb = k / kQK_K;
  const int64_t groups = (n + kPanelRows - 1) / kPanelRows;
  Panel<Format::kSub> p[2];  // about 90 KiB of the running thread's stack
  for (int64_t m0 = 0; m0 < m; m0 += kBlockRows) {
    const int64_t m1 = std::min(m, m0 + kBlockRows);
    for (int64_t b0 = 0; b0 < nb; b0 += kSliceBlocks) {
      const int64_t nbs = std::min(kSliceBlocks, nb - b0);
      for (int64_t g = 0; g < groups; g += 2) {
        const int np = (int)std::min<int64_t>(2, groups - g);
        __mmask16 mask[2];
        for (int t = 0; t < np; ++t) {
          const int nr = (int)std::min<int64_t>(kPanelRows, n - (g + t) * kPanelRows);
          Format::unpack(w + (g + t) * kPanelRows * row_bytes, row_bytes, nr, b0, nbs, p[t]);
          mask[t] = (__mmask16)((1u << nr) - 1);
        }
        float* yg = y + g * kPanelRows;
        if (np == 2) passes<Format, 2>(p, b0, nbs, x, xs, m0, m1, mask, yg, ldy);
        else passes<Format, 1>(p, b0, nbs, x, xs, m0, m1, mask, yg, ldy);
      }
    }
  }
}

}  // namespace

void q4_K_panel__avx512vnni(const std::byte* x, int64_t x_stride, int64_t m, const std::byte* w, int64_t w_row_bytes,
                            int64_t n, int64_t k, float* y, int64_t ldy) {
  panel_gemm<K4Format<BlockQ4_K>>(x, x_stride, m, w, w_row_bytes, n, k, y, ldy);
}

void q5_K_panel__avx512vnni(const std::byte* x, int64_t x_stride, int64_t m, const std::byte* w, int64_t w_row_bytes,
                            int64_t n, int64_t k, float* y, int64_t ldy) {
  panel_gemm<K4Format<BlockQ5_K>>(x, x_stride, m, w, w_row_bytes, n, k, y, ldy);
}

void q6_K_panel__avx512vnni(const std::byte* x, int64_t x_stride, int64_t m, const std::byte* w, int64_t w_row_bytes,
                            int64_t n, int64_t k, float* y, int64_t ldy) {
  panel_gemm<Q6KFormat>(x, x_stride, m, w, w_row_bytes, n, k, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
