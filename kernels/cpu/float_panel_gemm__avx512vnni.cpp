// AVX-512 f32, f16 and bf16 matmul on 16-row float panels, at every row
// count: decode's GEMV, batched decode and prefill (matmul.cpp).
//
// A panel is 16 weight rows turned so that vector u holds dword u of each
// row, a row a lane: one f32 element, or a pair of f16/bf16 elements, as
// the row stores them. The rows_x16 layout (core/weight_layout.h) is that
// form already, so its groups are read in place, each a contiguous stream;
// weights in rows (a tied classifier, `--weight-layout rows`) are turned a
// k-slice at a time (16 x 16 dword transposes) into a panel on the stack.
// x rows then pass over two panels at a time, up to kMaxMR rows a pass:
// each x element is broadcast once and multiplied into both panels'
// accumulators (24 of the 32 zmm at 12 rows), so a weight vector feeds up to
// 24 FMAs and no output needs a horizontal sum (the tiles of
// float_gemm__avx512vnni.cpp dot one x row with one weight row and sum 16
// lanes at the end). A pair is widened in registers: f16 by vpmovdw and
// vcvtph2ps, bf16 by a shift or a mask.
//
// Arithmetic. Every output is one FMA per element, in k order, from zero
// (slice after slice through y, exactly), whatever m, the pass, the layout
// or the call: a row's bits never depend on the step (batch invariance at no
// cost). The opt-in bf16 dot (bf16_panel_dots) rounds x to bf16 (nearest
// even, vcvtne2ps2bf16), as ggml's bf16 matmul does, and adds each pair's
// two products by vdpbf16ps (denormals flushed); it too takes the same
// steps at every m. This file is compiled with -mavx512bf16
// (kernels/CMakeLists.txt); its dot kernels run only where
// bf16_panel_dots() says so.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"
#include "kernels/cpu/transpose__avx512.h"

namespace tessera::kernels::cpu::detail {

namespace {

constexpr int kPanelRows = 16;
constexpr int kMaxPanels = (int)(kFPanelCallRows / kPanelRows);
// Dwords a k-slice at most: a call's turned panels (64 KiB) sit in L2
// while every x row passes, on the stack (kernels do not allocate, and pool
// threads keep no buffers of their own). The call's slice_dwords may ask
// for less, where the tiling pass's cache block is smaller.
constexpr int64_t kSliceDwords = kFPanelSliceDwords;
static_assert(kSliceDwords % 16 == 0);
constexpr int kMaxMR = 12;
// How far ahead a pass reading a weight stream in place asks for it (4 KiB).
constexpr int64_t kPrefetchVectors = 64;

enum class W { f32, f16, bf16 };
enum class Mul { fma, bf16_dot };

template <W T>
constexpr int64_t kPerDword = T == W::f32 ? 1 : 2;  // elements a dword

// Dwords [d, d + 16) of one row in rows layout, elements past k zero (an odd
// k leaves half of a 16-bit row's last dword; the rest is the next row's).
template <W T>
inline __m512i load_dwords(const std::byte* row, int64_t d, int64_t k) {
  const int64_t left = k - d * kPerDword<T>;
  if constexpr (T == W::f32) {
    const __mmask16 mask = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
    return _mm512_maskz_loadu_epi32(mask, reinterpret_cast<const int32_t*>(row) + d);
  } else {
    const __mmask32 mask = left >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << left) - 1u);
    return _mm512_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + 2 * d);
  }
}

// Rows [0, nr) of a rows-layout group (row r at w + r * row_bytes), dwords
// [d0, d0 + units), to panel[u] (rows past nr zero). Each row's line of the
// next slice is asked for as this one is read.
template <W T>
void turn_rows(const std::byte* w, int64_t row_bytes, int nr, int64_t d0, int64_t units, int64_t k, __m512i* panel) {
  for (int64_t u0 = 0; u0 < units; u0 += 16) {
    __m512i in[16], out[16];
    for (int r = 0; r < kPanelRows; ++r) {
      if (r < nr) {
        const std::byte* row = w + r * row_bytes;
        _mm_prefetch(reinterpret_cast<const char*>(row + 4 * (d0 + u0 + kSliceDwords)), _MM_HINT_T0);
        in[r] = load_dwords<T>(row, d0 + u0, k);
      } else {
        in[r] = _mm512_setzero_si512();
      }
    }
    transpose_16x16(in, out);
    const int64_t n_out = std::min<int64_t>(16, units - u0);
    for (int j = 0; j < n_out; ++j) _mm512_store_si512(panel + u0 + j, out[j]);
  }
}

// A rows_x16 last group of width nr < 16 (dword u of row r at 4 * (u * nr +
// r) past its start), dwords [d0, d0 + units), to panel[u].
void copy_short_group(const std::byte* g, int nr, int64_t d0, int64_t units, __m512i* panel) {
  const __mmask16 lanes = (__mmask16)((1u << nr) - 1u);
  for (int64_t u = 0; u < units; ++u)
    _mm512_store_si512(panel + u, _mm512_maskz_loadu_epi32(lanes, g + 4 * (d0 + u) * nr));
}

// x rows [0, mr) of a slice as bf16 pairs: xb[i * kSliceDwords + u] =
// elements 2(d0 + u), 2(d0 + u) + 1 of row i, rounded (zero past k).
void x_to_bf16_pairs(const float* x, int64_t ldx, int mr, int64_t d0, int64_t units, int64_t k, uint32_t* xb) {
  const auto mask = [&](int64_t from) {
    const int64_t left = k - from;
    return left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1u);
  };
  for (int i = 0; i < mr; ++i) {
    const float* row = x + i * ldx;
    for (int64_t u0 = 0; u0 < units; u0 += 16) {
      const int64_t e = 2 * (d0 + u0);
      const __m512 lo = _mm512_maskz_loadu_ps(mask(e), row + e);
      const __m512 hi = _mm512_maskz_loadu_ps(mask(e + 16), row + e + 16);
      // Elements 0..15 from lo, 16..31 from hi: dword u is the pair (e + 2u, e + 2u + 1).
      _mm512_storeu_si512(xb + i * kSliceDwords + u0, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
}

// What one pass reads: x rows (f32 at x, stride ldx, at the slice's first
// element; or bf16 pairs at xb, stride kSliceDwords) and up to two panels.
struct PassIn {
  const float* x = nullptr;
  int64_t ldx = 0;
  const uint32_t* xb = nullptr;
  const __m512i* panel[4] = {};
  int64_t units = 0;
  bool first = false;     // the first slice: accumulators start from zero, not from y
  bool half_tail = false;  // the last dword holds one element (a 16-bit row of odd k)
  bool stream = false;    // the panels are the weights in place: ask for them ahead
  __mmask16 last_lanes = 0xffff;  // the lanes of the last panel that are rows
};

// Unit u of x row i times the panel vectors wv into acc[i]: one FMA per
// element of the dword, in order; `half`: its first element only.
template <W T, Mul M, int MR, int NP>
inline void unit_step(const PassIn& in, int64_t u, const __m512i (&raw)[NP], __m512 (&acc)[MR][NP], bool half) {
  if constexpr (M == Mul::bf16_dot) {
    (void)half;  // x's pair past k is zero
    for (int i = 0; i < MR; ++i) {
      const __m512 b = _mm512_castsi512_ps(_mm512_set1_epi32((int)in.xb[i * kSliceDwords + u]));
      for (int p = 0; p < NP; ++p) acc[i][p] = _mm512_dpbf16_ps(acc[i][p], (__m512bh)raw[p], (__m512bh)b);
    }
  } else if constexpr (T == W::f32) {
    (void)half;
    for (int i = 0; i < MR; ++i) {
      const __m512 b = _mm512_set1_ps(in.x[i * in.ldx + u]);
      for (int p = 0; p < NP; ++p) acc[i][p] = _mm512_fmadd_ps(b, _mm512_castsi512_ps(raw[p]), acc[i][p]);
    }
  } else {
    __m512 even[NP], odd[NP];
    for (int p = 0; p < NP; ++p) {
      if constexpr (T == W::f16) {
        even[p] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(raw[p]));
        odd[p] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(raw[p], 16)));
      } else {
        even[p] = _mm512_castsi512_ps(_mm512_slli_epi32(raw[p], 16));
        odd[p] = _mm512_castsi512_ps(_mm512_and_si512(raw[p], _mm512_set1_epi32((int)0xffff0000u)));
      }
    }
    for (int i = 0; i < MR; ++i) {
      const float* xi = in.x + i * in.ldx + 2 * u;
      const __m512 b0 = _mm512_set1_ps(xi[0]);
      for (int p = 0; p < NP; ++p) acc[i][p] = _mm512_fmadd_ps(b0, even[p], acc[i][p]);
      if (!half) {
        const __m512 b1 = _mm512_set1_ps(xi[1]);
        for (int p = 0; p < NP; ++p) acc[i][p] = _mm512_fmadd_ps(b1, odd[p], acc[i][p]);
      }
    }
  }
}

// y[i * ldy + 16 p + lane] (+)= units [0, units) of x row i against panel
// p, i < MR, p < NP.
template <W T, Mul M, int MR, int NP>
void pass(const PassIn& in, float* y, int64_t ldy) {
  __m512 acc[MR][NP];
  for (int i = 0; i < MR; ++i)
    for (int p = 0; p < NP; ++p)
      acc[i][p] = in.first ? _mm512_setzero_ps()
                           : _mm512_maskz_loadu_ps(p == NP - 1 ? in.last_lanes : (__mmask16)0xffff, y + i * ldy + 16 * p);
  const int64_t whole = in.units - (in.half_tail ? 1 : 0);
  for (int64_t u = 0; u < in.units; ++u) {
    __m512i raw[NP];
    for (int p = 0; p < NP; ++p) {
      if (in.stream) _mm_prefetch(reinterpret_cast<const char*>(in.panel[p] + u + kPrefetchVectors), _MM_HINT_T0);
      raw[p] = _mm512_loadu_si512(in.panel[p] + u);
    }
    unit_step<T, M, MR, NP>(in, u, raw, acc, u >= whole);
  }
  for (int i = 0; i < MR; ++i)
    for (int p = 0; p < NP; ++p)
      _mm512_mask_storeu_ps(y + i * ldy + 16 * p, p == NP - 1 ? in.last_lanes : (__mmask16)0xffff, acc[i][p]);
}

// Panels [p, p + NP) for one pass.
template <W T, Mul M, int MR, int NP>
void pass_at(PassIn in, const __m512i* const* panels, const bool* streams, int p, int n_panels, __mmask16 last_lanes,
             float* y, int64_t ldy) {
  for (int q = 0; q < NP; ++q) in.panel[q] = panels[p + q];
  in.stream = streams[p];
  in.last_lanes = p + NP == n_panels ? last_lanes : (__mmask16)0xffff;
  pass<T, M, MR, NP>(in, y + 16 * p, ldy);
}

// MR x rows over every panel of the call, two at a time, or four for one or
// two x rows (decode: four accumulator chains a row to cover FMA latency
// while the weights stream).
template <W T, Mul M, int MR>
void rows_over_panels(const PassIn& in, const __m512i* const* panels, const bool* streams, int n_panels,
                      __mmask16 last_lanes, float* y, int64_t ldy) {
  int p = 0;
  if constexpr (MR <= 2)
    for (; p + 4 <= n_panels; p += 4) pass_at<T, M, MR, 4>(in, panels, streams, p, n_panels, last_lanes, y, ldy);
  for (; p + 2 <= n_panels; p += 2) pass_at<T, M, MR, 2>(in, panels, streams, p, n_panels, last_lanes, y, ldy);
  if (p < n_panels) pass_at<T, M, MR, 1>(in, panels, streams, p, n_panels, last_lanes, y, ldy);
}

template <W T, Mul M>
void panel_call(const FPanelCall& c) {
  const int n_panels = (int)((c.n + kPanelRows - 1) / kPanelRows);
  const int last_rows = (int)(c.n - (int64_t)(n_panels - 1) * kPanelRows);
  const __mmask16 last_lanes = (__mmask16)((1u << last_rows) - 1u);
  const int64_t dwords = (c.k + kPerDword<T> - 1) / kPerDword<T>;
  // One block of x rows (decode, small batches) reuses no panel across
  // blocks, so where every panel is read in place each pass streams its
  // groups front to back over the whole k; otherwise k-slices keep a
  // slice's panels in L2 for every block of x rows. (The bf16 dot's x
  // pairs are held a slice at a time: it always slices.)
  const bool all_in_place = c.x16 && last_rows == kPanelRows;
  const int64_t sliced = c.slice_dwords > 0 ? std::clamp<int64_t>(c.slice_dwords / 16 * 16, 16, kSliceDwords) : kSliceDwords;
  const int64_t slice = M == Mul::fma && all_in_place && c.m <= kMaxMR ? dwords : sliced;
  alignas(64) __m512i turned[kMaxPanels * kSliceDwords];
  alignas(64) uint32_t xb[M == Mul::bf16_dot ? kMaxMR * kSliceDwords : 1];
  const __m512i* panels[kMaxPanels];
  bool streams[kMaxPanels];
  for (int64_t d0 = 0; d0 < dwords; d0 += slice) {
    const int64_t units = std::min(slice, dwords - d0);
    for (int p = 0; p < n_panels; ++p) {
      const int nr = p + 1 == n_panels ? last_rows : kPanelRows;
      const std::byte* g = c.w + p * kPanelRows * c.w_row_bytes;
      __m512i* own = turned + p * kSliceDwords;
      streams[p] = c.x16 && nr == kPanelRows;
      if (streams[p]) {
        panels[p] = reinterpret_cast<const __m512i*>(g) + d0;
        continue;
      }
      if (c.x16)
        copy_short_group(g, nr, d0, units, own);
      else
        turn_rows<T>(g, c.w_row_bytes, nr, d0, units, c.k, own);
      panels[p] = own;
    }
    for (int64_t i0 = 0; i0 < c.m;) {
      const int64_t left = c.m - i0;
      const int mr = left >= 12 ? 12 : left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      PassIn in;
      in.x = c.x + i0 * c.ldx + d0 * kPerDword<T>;
      in.ldx = c.ldx;
      in.units = units;
      in.first = d0 == 0;
      in.half_tail = kPerDword<T> == 2 && c.k % 2 == 1 && d0 + units == dwords;
      if constexpr (M == Mul::bf16_dot) {
        x_to_bf16_pairs(c.x + i0 * c.ldx, c.ldx, mr, d0, units, c.k, xb);
        in.xb = xb;
      }
      float* y = c.y + i0 * c.ldy;
      switch (mr) {
        case 12: rows_over_panels<T, M, 12>(in, panels, streams, n_panels, last_lanes, y, c.ldy); break;
        case 8: rows_over_panels<T, M, 8>(in, panels, streams, n_panels, last_lanes, y, c.ldy); break;
        case 4: rows_over_panels<T, M, 4>(in, panels, streams, n_panels, last_lanes, y, c.ldy); break;
        case 2: rows_over_panels<T, M, 2>(in, panels, streams, n_panels, last_lanes, y, c.ldy); break;
        default: rows_over_panels<T, M, 1>(in, panels, streams, n_panels, last_lanes, y, c.ldy); break;
      }
      i0 += mr;
    }
  }
}

}  // namespace

void f32_panel__avx512vnni(const FPanelCall& c) { panel_call<W::f32, Mul::fma>(c); }

void f16_panel__avx512vnni(const FPanelCall& c) { panel_call<W::f16, Mul::fma>(c); }

bool bf16_panel_dots() {
  static const bool dots = [] {
    const char* asked = std::getenv("TESSERA_CPU_BF16_DOT");
    return __builtin_cpu_supports("avx512bf16") && asked != nullptr && std::strcmp(asked, "1") == 0;
  }();
  return dots;
}

void bf16_panel__avx512vnni(const FPanelCall& c) {
  if (bf16_panel_dots())
    panel_call<W::bf16, Mul::bf16_dot>(c);
  else
    panel_call<W::bf16, Mul::fma>(c);
}

}  // namespace tessera::kernels::cpu::detail
