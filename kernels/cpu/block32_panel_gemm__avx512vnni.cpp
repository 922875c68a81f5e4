// AVX-512 VNNI q8_0 and q4_0 matmul on 16-row int8 panels.
// From kPanelMinRows x rows, a k-slice of 16 weight rows is unpacked once
// into a panel whose vector j of block b holds, in lane r, codes 4j..4j+3 of
// row r's block b (unsigned: q8_0 as q + 128, q4_0 as its raw nibble q + 8),
// and its scales widened to f32. The x rows then pass over two panels at a
// time: per block, eight vpdpbusd a panel with x's 4 codes broadcast give
// lane r the whole block's int32 dot with row r (exact: the sum starts from
// the x row's -c * sum(q), isa_kernels.h's lanes layout), and one convert,
// one multiply and one FMA scale it into lane r's f32 sum: 8 dot
// instructions to 3 others per 16 x 32 multiply-adds, where the 4x4 tiles
// this replaces took about 2 to 5 and regrouped the weights for every 4 x
// rows. Below kPanelMinRows (decode) the few-rows pass regroups instead.
// Every output is acc = fma(float(dot_b), w_d_b * x_d_b, acc) over b in
// order from 0, whatever the pass (few rows, kMaxMR rows or a tail), the
// slice (acc travels through y, exactly) or the row's place, so a row's
// bits never depend on m.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

constexpr int kPanelRows = 16;
// Blocks per k-slice: a panel of 64 KiB of codes and 8 KiB of scales, on the
// stack of whichever thread runs it, stays in L2 while the x rows pass.
constexpr int64_t kSliceBlocks = 128;
// x rows per pass, over two panels at once: their 16 weight vectors and
// 2 x kMaxMR f32 sums stay in registers, and each x broadcast serves both
// (one panel and 12 rows a pass was about 10 % slower: medians, one thread).
constexpr int kMaxMR = 6;

struct Panel {
  alignas(64) uint8_t codes[kSliceBlocks][8][64];
  alignas(64) float scale[kSliceBlocks][kPanelRows];
  alignas(64) uint16_t scale_f16[kSliceBlocks][kPanelRows];
};

// Rows r and r + 8 of a 16 x 8 dword matrix, as z[r] (row r in the low 256
// bits, r + 8 in the high), to its columns: out[j] lane r = row r's dword j.
inline void transpose_16x8(const __m512i (&z)[8], __m512i (&out)[8]) {
  __m512i t[8], u[8];
  for (int p = 0; p < 4; ++p) {
    t[2 * p] = _mm512_unpacklo_epi32(z[2 * p], z[2 * p + 1]);      // per 128 bits: a0 b0 a1 b1
    t[2 * p + 1] = _mm512_unpackhi_epi32(z[2 * p], z[2 * p + 1]);  // a2 b2 a3 b3
  }
  for (int h = 0; h < 2; ++h) {  // rows 0-3 (h = 0) and 4-7 (h = 1) of each half
    const __m512i* s = t + 4 * h;
    u[4 * h + 0] = _mm512_unpacklo_epi64(s[0], s[2]);  // a0 b0 c0 d0 (dword 0 | 4 per 256 bits)
    u[4 * h + 1] = _mm512_unpackhi_epi64(s[0], s[2]);  // dword 1 | 5
    u[4 * h + 2] = _mm512_unpacklo_epi64(s[1], s[3]);  // dword 2 | 6
    u[4 * h + 3] = _mm512_unpackhi_epi64(s[1], s[3]);  // dword 3 | 7
  }
  // u[j] (j < 4) 128-bit lanes: rows 0-3 dword j, rows 0-3 dword j+4, rows 8-11 j, rows 8-11 j+4;
  // u[4 + j] the same for rows 4-7 and 12-15.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i second = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int j = 0; j < 4; ++j) {
    out[j] = _mm512_permutex2var_epi64(u[j], first, u[4 + j]);
    out[j + 4] = _mm512_permutex2var_epi64(u[j], second, u[4 + j]);
  }
}

inline const std::byte* block_at(const QPanelRows& w, int r, int64_t b) {
  const int s = r < w.nr ? r : 0;  // empty slots repeat row 0; their lanes are never stored
  return w.row[s] + b * w.block_stride[s];
}

// The f16 scales of blocks [b0, b0 + nbs) of the 16 rows into the panel:
// scalar copies first, widened only after all are stored (a vector load of
// just-stored halves would miss store forwarding on every block).
template <typename Block>
void unpack_scales(const QPanelRows& w, int64_t b0, int64_t nbs, Panel& p) {
  for (int r = 0; r < kPanelRows; ++r)
    for (int64_t b = 0; b < nbs; ++b)
      p.scale_f16[b][r] = reinterpret_cast<const Block*>(block_at(w, r, b0 + b))->d;
  for (int64_t b = 0; b < nbs; ++b)
    _mm512_store_ps(p.scale[b], _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.scale_f16[b]))));
}

// Rows 4t..4t+3 of a group regrouped for the few-rows pass: lo (elements
// 0-15 of each row, row r in 128-bit lane r) and hi (elements 16-31), as
// dpbusd's unsigned operand.
struct Regrouped {
  __m512i lo, hi;
};

struct Q8_0Format {
  using Block = BlockQ8_0;
  static constexpr DType kType = DType::q8_0;
  static Regrouped regroup(const QPanelRows& w, int t, int64_t b) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i lo_idx = _mm512_set_epi64(13, 12, 9, 8, 5, 4, 1, 0);
    const __m512i hi_idx = _mm512_set_epi64(15, 14, 11, 10, 7, 6, 3, 2);
    auto row = [&](int r) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const Block*>(block_at(w, 4 * t + r, b))->qs));
    };
    const __m512i w01 = _mm512_inserti64x4(_mm512_castsi256_si512(row(0)), row(1), 1);
    const __m512i w23 = _mm512_inserti64x4(_mm512_castsi256_si512(row(2)), row(3), 1);
    return {_mm512_xor_si512(_mm512_permutex2var_epi64(w01, lo_idx, w23), flip),
            _mm512_xor_si512(_mm512_permutex2var_epi64(w01, hi_idx, w23), flip)};
  }
  static void unpack(const QPanelRows& w, int64_t b0, int64_t nbs, Panel& p) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nbs; ++b) {
      __m512i z[8], out[8];
      for (int r = 0; r < 8; ++r) {
        const auto* lo = reinterpret_cast<const Block*>(block_at(w, r, b0 + b))->qs;
        const auto* hi = reinterpret_cast<const Block*>(block_at(w, r + 8, b0 + b))->qs;
        z[r] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo))),
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi)), 1);
      }
      transpose_16x8(z, out);
      for (int j = 0; j < 8; ++j) _mm512_store_si512(p.codes[b][j], _mm512_xor_si512(out[j], flip));
    }
    unpack_scales<Block>(w, b0, nbs, p);
  }
};

struct Q4_0Format {
  using Block = BlockQ4_0;
  static constexpr DType kType = DType::q4_0;
  static Regrouped regroup(const QPanelRows& w, int t, int64_t b) {
    auto row = [&](int r) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const Block*>(block_at(w, 4 * t + r, b))->qs));
    };
    __m512i v = _mm512_castsi128_si512(row(0));
    v = _mm512_inserti32x4(v, row(1), 1);
    v = _mm512_inserti32x4(v, row(2), 2);
    v = _mm512_inserti32x4(v, row(3), 3);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    return {_mm512_and_si512(v, low4), _mm512_and_si512(_mm512_srli_epi16(v, 4), low4)};
  }
  static void unpack(const QPanelRows& w, int64_t b0, int64_t nbs, Panel& p) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    // 128-bit lanes [qs, qs, qs', qs'] to [low nibbles, high, low', high']:
    // elements 0-15 and 16-31 of rows r and r + 8, the dwords transpose_16x8 takes.
    const __m512i nibble_shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
    for (int64_t b = 0; b < nbs; ++b) {
      __m512i z[8], out[8];
      for (int r = 0; r < 8; ++r) {
        const auto* lo = reinterpret_cast<const Block*>(block_at(w, r, b0 + b))->qs;
        const auto* hi = reinterpret_cast<const Block*>(block_at(w, r + 8, b0 + b))->qs;
        const __m512i v = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo)))),
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(hi))), 1);
        z[r] = _mm512_and_si512(_mm512_srlv_epi64(v, nibble_shift), low4);
      }
      transpose_16x8(z, out);
      for (int j = 0; j < 8; ++j) _mm512_store_si512(p.codes[b][j], out[j]);
    }
    unpack_scales<Block>(w, b0, nbs, p);
  }
};

template <typename T>
inline const T* at(const void* p, int64_t off) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + off);
}

// MR x rows (byte stride xs, nb blocks a row) over NP panels' nbs blocks
// (panel n's outputs at column 16n), which are x's blocks b0...; the sums
// start from y (first: from zero) and are stored back to each panel's nr
// columns (mask[n]).
template <int MR, int NP>
void panel_pass(const Panel* p, int64_t nbs, const std::byte* x, int64_t xs, int64_t nb, int64_t b0, bool first,
                const __mmask16* mask, float* y, int64_t ldy) {
  const int8_t* xq = qx_qs(x) + b0 * kQK8_0;
  const int32_t* xc = qx_lane_corr(x, nb) + b0;
  const float* xd = qx_lane_d(x, nb) + b0;
  __m512 acc[MR][NP];
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < NP; ++n) acc[i][n] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[n], y + i * ldy + 16 * n);
  for (int64_t b = 0; b < nbs; ++b, xq += kQK8_0, ++xc, ++xd) {
    __m512i wv[NP][8];
    __m512 ws[NP];
    for (int n = 0; n < NP; ++n) {
      for (int j = 0; j < 8; ++j) wv[n][j] = _mm512_load_si512(p[n].codes[b][j]);
      ws[n] = _mm512_load_ps(p[n].scale[b]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const int32_t* q = at<int32_t>(xq, i * xs);
      const __m512i c = _mm512_set1_epi32(*at<int32_t>(xc, i * xs));
      __m512i dot[NP];
      for (int n = 0; n < NP; ++n) dot[n] = c;
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i xb = _mm512_set1_epi32(q[j]);
        for (int n = 0; n < NP; ++n) dot[n] = _mm512_dpbusd_epi32(dot[n], wv[n][j], xb);
      }
      const __m512 xdv = _mm512_set1_ps(*at<float>(xd, i * xs));
      for (int n = 0; n < NP; ++n) acc[i][n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[n]), _mm512_mul_ps(ws[n], xdv), acc[i][n]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < NP; ++n) _mm512_mask_storeu_ps(y + i * ldy + 16 * n, mask[n], acc[i][n]);
}

// The passes of fewer than kMaxMR rows, one instantiation per count.
template <int MR, int NP>
void tail_pass(int rem, const Panel* p, int64_t nbs, const std::byte* x, int64_t xs, int64_t nb, int64_t b0, bool first,
               const __mmask16* mask, float* y, int64_t ldy) {
  if constexpr (MR >= 1) {
    if (rem == MR) return panel_pass<MR, NP>(p, nbs, x, xs, nb, b0, first, mask, y, ldy);
    tail_pass<MR - 1, NP>(rem, p, nbs, x, xs, nb, b0, first, mask, y, ldy);
  }
}

// x rows pass in blocks of kBlockRows: per k-slice a block's x (60 rows x 5
// KiB) stays in L2 while every group's panel passes over it; a panel is
// unpacked again for each block, a few percent of the block's dots.
constexpr int64_t kBlockRows = 10 * kMaxMR;

// Below kPanelMinRows x rows (decode) a group is not unpacked: each block
// of its rows is regrouped 4 rows to a register (4 lanes a row), dotted
// with the x rows, and the 4 registers' lanes are summed to one int32 per
// row; the sums then take the panel pass's float steps, so the bits are
// the panel's. Lane 4L + t holds row 4t + L (kLaneRow, its own inverse).
constexpr int kPanelMinRows = 8;
// How far ahead of its reads the few-rows pass prefetches each of its 16
// weight rows (16 streams are more than the hardware prefetcher keeps up).
constexpr int64_t kFewRowsPrefetchBlocks = 32;

template <typename Format, int MR>
void few_rows_pass(const QPanelRows& w, int64_t nb, const std::byte* x, int64_t xs, float* y, int64_t ldy) {
  using Block = typename Format::Block;
  const __m512i lane_row = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __mmask16 mask = (__mmask16)((1u << w.nr) - 1);
  const int8_t* xq = qx_qs(x);
  const int32_t* xc = qx_lane_corr(x, nb);
  const float* xd = qx_lane_d(x, nb);
  __m512 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b, xq += kQK8_0, ++xc, ++xd) {
    if (b % 2 == 0)
      for (int r = 0; r < w.nr; ++r) _mm_prefetch(reinterpret_cast<const char*>(block_at(w, r, b + kFewRowsPrefetchBlocks)), _MM_HINT_T0);
    Regrouped g[4];
    for (int t = 0; t < 4; ++t) g[t] = Format::regroup(w, t, b);
    // Four rows' f16 scales a general register (as the 4x4 tiles did), widened, to lane order.
    long long packed[4];
    for (int t = 0; t < 4; ++t) {
      uint64_t v = 0;
      for (int r = 0; r < 4; ++r) v |= (uint64_t)reinterpret_cast<const Block*>(block_at(w, 4 * t + r, b))->d << (16 * r);
      packed[t] = (long long)v;
    }
    const __m512 ws = _mm512_permutexvar_ps(
        lane_row, _mm512_cvtph_ps(_mm256_set_epi64x(packed[3], packed[2], packed[1], packed[0])));
    for (int i = 0; i < MR; ++i) {
      const int8_t* q = at<int8_t>(xq, i * xs);
      const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
      const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
      __m512i d[4];
      for (int t = 0; t < 4; ++t)
        d[t] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), g[t].lo, xlo), g[t].hi, xhi);
      // Per 128-bit lane L: [d0 lanes 0+2, d1 0+2, d0 1+3, d1 1+3], the same for d2, d3, then their halves.
      const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]), _mm512_unpackhi_epi32(d[0], d[1]));
      const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]), _mm512_unpackhi_epi32(d[2], d[3]));
      const __m512i sum = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
      const __m512i dot = _mm512_add_epi32(sum, _mm512_set1_epi32(*at<int32_t>(xc, i * xs)));
      const __m512 scale = _mm512_mul_ps(ws, _mm512_set1_ps(*at<float>(xd, i * xs)));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[i]);
    }
  }
  for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(y + i * ldy, mask, _mm512_permutexvar_ps(lane_row, acc[i]));
}

// Passes of up to 4 x rows.
template <typename Format>
void few_rows(const std::byte* x, int64_t xs, int m, const QPanelRows& w, int64_t nb, float* y, int64_t ldy) {
  for (int i = 0; i < m; i += 4) {
    const std::byte* xi = x + i * xs;
    float* yi = y + i * ldy;
    switch (std::min(4, m - i)) {
      case 1: few_rows_pass<Format, 1>(w, nb, xi, xs, yi, ldy); break;
      case 2: few_rows_pass<Format, 2>(w, nb, xi, xs, yi, ldy); break;
      case 3: few_rows_pass<Format, 3>(w, nb, xi, xs, yi, ldy); break;
      default: few_rows_pass<Format, 4>(w, nb, xi, xs, yi, ldy); break;
    }
  }
}

template <typename Format>
void panel_gemm(const std::byte* x, int64_t xs, int64_t m, const QPanelRows* groups, int n_groups, int64_t k, float* y,
                int64_t ldy) {
  const int64_t nb = k / kQK8_0;
  if (m < kPanelMinRows) {
    for (int g = 0; g < n_groups; ++g) few_rows<Format>(x, xs, (int)m, groups[g], nb, y + g * kPanelRows, ldy);
    return;
  }
  Panel p[2];  // 150 KiB of the running thread's stack
  for (int64_t m0 = 0; m0 < m; m0 += kBlockRows) {
    const int64_t m1 = std::min(m, m0 + kBlockRows);
    for (int64_t b0 = 0; b0 < nb; b0 += kSliceBlocks) {
      const int64_t nbs = std::min(kSliceBlocks, nb - b0);
      for (int g = 0; g < n_groups; g += 2) {
        const int np = std::min(2, n_groups - g);
        __mmask16 mask[2];
        for (int n = 0; n < np; ++n) {
          Format::unpack(groups[g + n], b0, nbs, p[n]);
          mask[n] = (__mmask16)((1u << groups[g + n].nr) - 1);
        }
        float* yg = y + g * kPanelRows;
        int64_t i = m0;
        auto passes = [&]<int NP>() {
          for (; i + kMaxMR <= m1; i += kMaxMR)
            panel_pass<kMaxMR, NP>(p, nbs, x + i * xs, xs, nb, b0, b0 == 0, mask, yg + i * ldy, ldy);
          if (i < m1)
            tail_pass<kMaxMR - 1, NP>((int)(m1 - i), p, nbs, x + i * xs, xs, nb, b0, b0 == 0, mask, yg + i * ldy, ldy);
        };
        if (np == 2) passes.template operator()<2>();
        else passes.template operator()<1>();
      }
    }
  }
}

}  // namespace

void q8_0_panel__avx512vnni(const std::byte* x, int64_t x_stride, int64_t m, const QPanelRows* groups, int n_groups,
                            int64_t k, float* y, int64_t ldy) {
  panel_gemm<Q8_0Format>(x, x_stride, m, groups, n_groups, k, y, ldy);
}

void q4_0_panel__avx512vnni(const std::byte* x, int64_t x_stride, int64_t m, const QPanelRows* groups, int n_groups,
                            int64_t k, float* y, int64_t ldy) {
  panel_gemm<Q4_0Format>(x, x_stride, m, groups, n_groups, k, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
