// AVX-512 VNNI q8_0 and q4_0 matmul on 16-row int8 panels, at every row
// count (GEMV included), over weights in the rows_x16 layout
// (core/weight_layout.h): per block, 16 rows' f16 scales and then the code
// dwords with lane r = row r, so one 512-bit load is a vector whose lanes
// are the rows. The x rows (isa_kernels.h's lanes layout) pass over two
// such groups at a time: per block, eight vpdpbusd a group with x's 4
// codes broadcast give lane r the block's whole int32 dot with row r (q8_0
// codes enter as q + 128, q4_0's as their raw nibbles q + 8; the sum starts
// from the x row's -c * sum(q), so it is exact), then one convert, one
// multiply and one FMA scale it into lane r's f32 sum: 8 dot instructions
// to 3 others per 16 x 32 multiply-adds, no horizontal sums. The first
// pass over a k-slice of weights read in place, which streams them from
// memory, instead takes up to 16 x rows over one group at a time (see
// `passes` in panel_gemm).
// Weights in the standard or rows_x4 layout (a tied classifier, or
// --weight-layout) are first gathered into the same form, a k-slice of 16
// rows at a time, on the stack: the same kernel then runs over the copy.
// Every output is acc = fma(float(dot_b), w_d_b * x_d_b, acc) over b in
// order from 0, whatever the pass (kMaxMR rows, a tail or a streaming
// pass), the slice (acc travels through y, exactly), the layout or the
// row's place, so a row's bits never depend on m or on the layout.
#include <algorithm>
#include <cstring>

#include "core/weight_layout.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

constexpr int kGroupRows = kRowsX16Group;
// Blocks per k-slice: 16 rows' slice (68 KiB of q8_0) stays in L2 while a
// block of x rows passes over it, and fits a gathered copy on the stack.
constexpr int64_t kSliceBlocks = 128;
// x rows per pass, over two groups at once: their 16 weight vectors and
// 2 x kMaxMR f32 sums stay in registers, and each x broadcast serves both
// (one group and 12 rows a pass was about 10 % slower: medians, one thread).
constexpr int kMaxMR = 6;
// x rows in a slice's first pass over weights read in place, over one group.
constexpr int kStreamRows = 16;
// x rows pass in blocks of kBlockRows: per k-slice a block's x (60 rows x 5
// KiB) stays in L2 while every group passes over it.
constexpr int64_t kBlockRows = 10 * kMaxMR;
// How far ahead (blocks) a pass asks for its groups' next bytes.
constexpr int64_t kPrefetchBlocks = 16;
// How far ahead (blocks) a gather asks for each of its 16 rows.
constexpr int64_t kGatherPrefetchBlocks = 32;

// One group's k-slice in the rows_x16 form: block b's piece (w scales, then
// the code dwords, w per dword) at p + b * step.
struct GroupSlice {
  const std::byte* p = nullptr;
  int64_t step = 0;
  int w = 0;
  // Bytes a prefetch past the slice's end skips: a slice of all k of a pair
  // read in place runs into the pair's other group, already streaming, where
  // one group further on lies the next pair's (0: no skip).
  int64_t wrap = 0;
};

struct Q8_0Format {
  using Block = BlockQ8_0;
  static constexpr int kDwords = 8;  // code dwords a block
  // The 8 code vectors of a block piece (w rows), as dpbusd's unsigned operand: q + 128.
  static void load(const std::byte* codes, int w, __mmask16 m, __m512i (&v)[8]) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int j = 0; j < 8; ++j) v[j] = _mm512_xor_si512(_mm512_maskz_loadu_epi32(m, codes + 4 * j * w), flip);
  }
};

struct Q4_0Format {
  using Block = BlockQ4_0;
  static constexpr int kDwords = 4;
  // Dword j's low nibbles are elements 4j..4j+3, its high nibbles 16+4j..19+4j:
  // vectors j and j + 4, matching x's dwords j and j + 4. Raw nibbles are q + 8.
  static void load(const std::byte* codes, int w, __mmask16 m, __m512i (&v)[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m512i c = _mm512_maskz_loadu_epi32(m, codes + 4 * j * w);
      v[j] = _mm512_and_si512(c, low4);
      v[j + 4] = _mm512_and_si512(_mm512_srli_epi16(c, 4), low4);
    }
  }
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

inline const std::byte* block_at(const QPanelRows& w, int r, int64_t b) { return w.row[r] + b * w.block_stride[r]; }

// A full group's block b of q8_0 in the rows_x16 form at dst: 16 scales, then
// the 16 x 8 code dwords transposed (dword j of the 16 rows together).
inline void gather_q8_0_block(const QPanelRows& w, int64_t b, std::byte* dst) {
  __m512i z[8], out[8];
  for (int r = 0; r < 8; ++r) {
    const auto* lo = reinterpret_cast<const BlockQ8_0*>(block_at(w, r, b));
    const auto* hi = reinterpret_cast<const BlockQ8_0*>(block_at(w, r + 8, b));
    z[r] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo->qs))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi->qs)), 1);
  }
  transpose_16x8(z, out);
  auto* d = reinterpret_cast<uint16_t*>(dst);
  for (int r = 0; r < 16; ++r) d[r] = reinterpret_cast<const BlockQ8_0*>(block_at(w, r, b))->d;
  for (int j = 0; j < 8; ++j) _mm512_storeu_si512(dst + 32 + 64 * j, out[j]);
}

// The same for q4_0: 16 rows x 4 code dwords, 4 rows a register (row 4q + i's
// dword j in lane 4i + j of v[q]), permuted to dword j of the 16 rows.
inline void gather_q4_0_block(const QPanelRows& w, int64_t b, std::byte* dst) {
  __m512i v[4];
  for (int q = 0; q < 4; ++q) {
    auto row = [&](int i) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const BlockQ4_0*>(block_at(w, 4 * q + i, b))->qs));
    };
    v[q] = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(row(0)), row(1), 1), row(2), 2),
                              row(3), 3);
  }
  auto* d = reinterpret_cast<uint16_t*>(dst);
  for (int r = 0; r < 16; ++r) d[r] = reinterpret_cast<const BlockQ4_0*>(block_at(w, r, b))->d;
  for (int j = 0; j < 4; ++j) {
    // Lane r < 8 takes row r's dword j: v[r / 4] lane 4 (r % 4) + j, from the pair (v0, v1) or (v2, v3).
    const __m512i idx = _mm512_setr_epi32(j, 4 + j, 8 + j, 12 + j, 16 + j, 20 + j, 24 + j, 28 + j, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i lo = _mm512_permutex2var_epi32(v[0], idx, v[1]);
    const __m512i hi = _mm512_permutex2var_epi32(v[2], idx, v[3]);
    _mm512_storeu_si512(dst + 32 + 64 * j, _mm512_inserti64x4(lo, _mm512_castsi512_si256(hi), 1));
  }
}

// Blocks [b0, b0 + nbs) of rows in another layout, gathered into the
// rows_x16 form at buf (the piece order core/weight_layout.h describes):
// a full group with the transposes above, a short last group dword by dword.
template <typename Format>
GroupSlice gather(const QPanelRows& w, int64_t b0, int64_t nbs, std::byte* buf) {
  constexpr int64_t bb = sizeof(typename Format::Block);
  const int nr = w.nr;
  if (nr == kGroupRows) {
    for (int64_t b = 0; b < nbs; ++b) {
      // 16 row streams are more than the hardware prefetcher follows.
      for (int r = 0; r < kGroupRows; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(block_at(w, r, b0 + b + kGatherPrefetchBlocks)), _MM_HINT_T0);
      if constexpr (Format::kDwords == 8) gather_q8_0_block(w, b0 + b, buf + b * kGroupRows * bb);
      else gather_q4_0_block(w, b0 + b, buf + b * kGroupRows * bb);
    }
    return {buf, kGroupRows * bb, kGroupRows};
  }
  for (int r = 0; r < nr; ++r) {
    const std::byte* src = w.row[r] + b0 * w.block_stride[r];
    for (int64_t b = 0; b < nbs; ++b, src += w.block_stride[r]) {
      std::byte* dst = buf + b * nr * bb;
      std::memcpy(dst + 2 * r, src, 2);
      for (int j = 0; j < Format::kDwords; ++j) std::memcpy(dst + 2 * nr + 4 * (j * nr + r), src + 2 + 4 * j, 4);
    }
  }
  return {buf, nr * bb, nr};
}

template <typename T>
inline const T* at(const void* p, int64_t off) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + off);
}

// MR x rows (byte stride xs, nb blocks a row) over NP groups' nbs blocks
// (group n's outputs at column 16n), which are x's blocks b0...; the sums
// start from y (first: from zero) and are stored back to each group's w columns.
// Only the pass that first reads a slice (Prefetch) asks for its bytes ahead:
// later passes find them in cache, where the prefetch loop cost about a
// fifth of the pass (single thread, weights in L2/L3).
template <typename Format, int MR, int NP, bool Prefetch>
void pass(const GroupSlice* g, int64_t nbs, const std::byte* x, int64_t xs, int64_t nb, int64_t b0, bool first, float* y,
          int64_t ldy) {
  const int8_t* xq = qx_qs(x) + b0 * kQK8_0;
  const int32_t* xc = qx_lane_corr(x, nb) + b0;
  const float* xd = qx_lane_d(x, nb) + b0;
  __mmask16 mask[NP];
  for (int n = 0; n < NP; ++n) mask[n] = (__mmask16)((1u << g[n].w) - 1);
  __m512 acc[MR][NP];
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < NP; ++n) acc[i][n] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[n], y + i * ldy + 16 * n);
  for (int64_t b = 0; b < nbs; ++b, xq += kQK8_0, ++xc, ++xd) {
    __m512i wv[NP][8];
    __m512 ws[NP];
    for (int n = 0; n < NP; ++n) {
      const std::byte* piece = g[n].p + b * g[n].step;
      if constexpr (Prefetch) {
        // Every line of the piece kPrefetchBlocks ahead (a piece is 9 lines of q8_0, 5 of q4_0).
        const char* ahead = reinterpret_cast<const char*>(piece + kPrefetchBlocks * g[n].step +
                                                          (b + kPrefetchBlocks >= nbs ? g[n].wrap : 0));
        if (g[n].w == kGroupRows) {
          constexpr int64_t kLines = (kGroupRows * sizeof(typename Format::Block) + 63) / 64;
#pragma GCC unroll 16
          for (int64_t l = 0; l < kLines; ++l) _mm_prefetch(ahead + 64 * l, _MM_HINT_T0);
        } else {
          for (int64_t off = 0; off < g[n].step; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
        }
      }
      ws[n] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask[n], piece));
      Format::load(piece + 2 * g[n].w, g[n].w, mask[n], wv[n]);
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

// The passes of 1 to MR rows, one instantiation per count.
template <typename Format, int MR, int NP, bool Prefetch>
void tail_pass(int rem, const GroupSlice* g, int64_t nbs, const std::byte* x, int64_t xs, int64_t nb, int64_t b0, bool first,
               float* y, int64_t ldy) {
  if constexpr (MR >= 1) {
    if (rem == MR) return pass<Format, MR, NP, Prefetch>(g, nbs, x, xs, nb, b0, first, y, ldy);
    tail_pass<Format, MR - 1, NP, Prefetch>(rem, g, nbs, x, xs, nb, b0, first, y, ldy);
  }
}

template <typename Format>
void panel_gemm(const std::byte* x, int64_t xs, int64_t m, const QPanelRows* groups, int n_groups, int64_t k, float* y,
                int64_t ldy) {
  constexpr int64_t bb = sizeof(typename Format::Block);
  const int64_t nb = k / kQK8_0;
  // Gathered copies of two groups' slices (2 x 68 KiB of the running thread's stack), used only
  // for weights not in rows_x16.
  alignas(64) std::byte buf[2][kSliceBlocks * kGroupRows * bb];
  bool all_packed = true;
  for (int gi = 0; gi < n_groups; ++gi) all_packed = all_packed && groups[gi].packed != nullptr;
  // Blocks [b0, b0 + nbs) of groups gi and gi + 1, every x row of [m0, m1) passing over them.
  auto run_slice = [&](int64_t m0, int64_t m1, int64_t b0, int64_t nbs, int gi) {
    const int np = std::min(2, n_groups - gi);
    GroupSlice g[2];
    for (int n = 0; n < np; ++n) {
      const QPanelRows& w = groups[gi + n];
      g[n] = w.packed ? GroupSlice{w.packed + b0 * w.nr * bb, w.nr * bb, w.nr} : gather<Format>(w, b0, nbs, buf[n]);
      // (Only where the pair's own pass streams: a streaming pass over one
      // group at a time runs from the first into the second, as it should.)
      if (w.packed && np == 2 && nbs == nb && m1 - m0 <= kMaxMR && w.nr == kGroupRows) g[n].wrap = nb * kGroupRows * bb;
    }
    float* yg = y + gi * kGroupRows;
    int64_t i = m0;
    // Weights read in place come from memory in the slice's first pass,
    // which prefetches them (Stream); later passes, and every pass over a
    // gathered copy, find them in cache. Where more than kMaxMR rows pass,
    // the first takes up to kStreamRows of them over one group at a time:
    // its 8 weight vectors leave registers for 16 rows' sums, so the group's
    // memory stream is spread over 16 rows' work instead of 6's (16 rows of
    // 16384 x 2048: 33 -> 42-46 % of the int8 roof, two threads), though
    // from cache it is slower than the pair's 6-row pass.
    auto passes = [&]<int NP, bool Stream>() {
      if (Stream && m1 - i > kMaxMR) {
        const int rows = (int)std::min<int64_t>(kStreamRows, m1 - i);
        for (int n = 0; n < NP; ++n)
          tail_pass<Format, kStreamRows, 1, true>(rows, g + n, nbs, x + i * xs, xs, nb, b0, b0 == 0, yg + 16 * n + i * ldy, ldy);
        i += rows;
      } else if (Stream) {
        return tail_pass<Format, kMaxMR, NP, true>((int)(m1 - i), g, nbs, x + i * xs, xs, nb, b0, b0 == 0, yg + i * ldy, ldy);
      }
      for (; i + kMaxMR <= m1; i += kMaxMR)
        pass<Format, kMaxMR, NP, false>(g, nbs, x + i * xs, xs, nb, b0, b0 == 0, yg + i * ldy, ldy);
      if (i < m1)
        tail_pass<Format, kMaxMR - 1, NP, false>((int)(m1 - i), g, nbs, x + i * xs, xs, nb, b0, b0 == 0, yg + i * ldy, ldy);
    };
    const bool in_place = groups[gi].packed != nullptr;
    if (np == 2) in_place ? passes.template operator()<2, true>() : passes.template operator()<2, false>();
    else in_place ? passes.template operator()<1, true>() : passes.template operator()<1, false>();
  };
  for (int64_t m0 = 0; m0 < m; m0 += kBlockRows) {
    const int64_t m1 = std::min(m, m0 + kBlockRows);
    // One slice of all k where a single pass of rows reads weights in place
    // (decode): each group then streams its bytes front to back once.
    const int64_t slice = m1 - m0 <= kStreamRows && all_packed ? nb : kSliceBlocks;
    for (int64_t b0 = 0; b0 < nb; b0 += slice)
      for (int gi = 0; gi < n_groups; gi += 2) run_slice(m0, m1, b0, std::min(slice, nb - b0), gi);
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
