// Matmul dispatch, blocking and threading, shared by every ISA family.
//   q8_0, q4_0 on avx512_vnni: x rows are quantized to q8 blocks in the
//               workspace, then the weights go in groups of 16 rows to the
//               panel kernels, which read rows_x16 in place (other layouts
//               gathered to it a k-slice at a time) and pass every x row
//               over each group (block32_panel_gemm__avx512vnni.cpp).
//   q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl: x rows are quantized to q8 blocks
//               of 32 in the workspace (with per-block sums for q4_1 and
//               q5_1's mins, as ggml's q8_1), then the ISA's integer tiles
//               (isa_kernels.h) run over the weights.
//   f32:        on avx512_vnni the float panels at every m (below), which
//               beat oneDNN's sgemm up to 128 rows and match it at 512
//               (docs/performance.md);
//               elsewhere our tiles below kOneDnnMinRows rows (decode is
//               memory-bound, and small-m sgemm loses to its own packing),
//               oneDNN's sgemm from there, one sequential call per parallel
//               chunk; our tiles
//               at every m under tile.batch_invariant (sgemm sums in another
//               order, so a row's bits would depend on the step's row count)
//               and in builds without oneDNN (TESSERA_ONEDNN=OFF: arm64).
// Every tile computes each output as one whole-K dot in an order set by k
// alone (the same for any x-row tile, any row count, any position), so apart
// from sgemm a row's bits never depend on the other rows of the step.
//   f16, bf16:  widened on the fly inside the tiles, FMA in f32; on
//               avx512_vnni the float panels at every m instead, which read
//               rows_x16 in place (rows turned a k-slice at a time) and sum
//               each output element by element in k order, invariant too
//               (float_panel_gemm__avx512vnni.cpp; bf16 multiplies in bf16
//               there only where TESSERA_CPU_BF16_DOT=1 asks).
//   q2_K..q6_K, iq4_xs: x rows are quantized to q8_K blocks (one scale per
//               256, sums per 16) in the workspace, then the ISA's integer
//               tiles run over the weights in their GGUF layout; on
//               avx512_vnni q4_K, q5_K and q6_K from kKPanelMinRows x rows
//               go to the panel kernels instead (16 weight rows unpacked
//               per k-slice, every x row passing over them), which give
//               each output the tiles' bits.
// Work is split over groups of 4 weight rows. Inside a chunk, weight rows are
// taken ~128 KiB at a time and every x-row tile passes over them while they
// sit in L2, so prefill reads each weight byte from memory once.
#if defined(TESSERA_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/weight_layout.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/ew_program.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"
#include "kernels/cpu/q8_K_activations.h"

namespace tessera::kernels::cpu {

namespace {

constexpr int kNR = 4;                      // weight rows per tile
constexpr int kMR = 4;                      // x rows per tile, at most
constexpr int64_t kL2Block = 128 * 1024;    // weight bytes kept hot across x tiles
constexpr int64_t kChunkBytes = 64 * 1024;  // least weight bytes (per x-row tile) per parallel chunk
constexpr int64_t kOneDnnMinRows = 64;      // measured crossover on Zen 4, 2 threads
constexpr int64_t kKPanelMinRows = 12;      // K-quant panels from here (measured crossover on Zen 4, docs/performance.md)
constexpr int64_t kKPanelCallRows = 128;    // weight rows a K-quant panel call (8 panels of 16)

// The epilogue over y[r0:r1, c0:c1], if there is one.
void epilogue(const MatmulArgs& a, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (a.epilogue) detail::apply_epilogue(*a.epilogue, a.y, a.n, r0, r1, c0, c1);
}

// tile(m0, mr, n0, nr) computes y[m0 : m0 + mr, n0 : n0 + nr], nr <= kNR,
// or with kWideTiles every row of an L2 block at once (tiles that take any
// row count: one call per block rather than per 4 rows, which for
// 2048-wide decode rows cost as much as a tenth of the dots). An epilogue
// runs over each x-row tile's block of columns right after its dots.
template <bool kWideTiles = false, typename Tile>
void blocked(const MatmulArgs& a, ParallelFor& pf, int64_t w_row_bytes, const Tile& tile) {
  const int64_t groups = (a.n + kNR - 1) / kNR;
  const int64_t group_bytes = kNR * w_row_bytes;
  const int64_t chunk_bytes = a.tile.chunk_bytes > 0 ? a.tile.chunk_bytes : kChunkBytes;
  const int64_t block_bytes = a.tile.weight_block_bytes > 0 ? a.tile.weight_block_bytes : kL2Block;
  // chunk_bytes is work per item in weight bytes per x-row tile: prefill's
  // many rows make each weight group more work, so items get fewer groups.
  const int64_t x_tiles = (a.m + kMR - 1) / kMR;
  const int64_t grain = std::max<int64_t>(1, chunk_bytes / (group_bytes * std::max<int64_t>(1, x_tiles)));
  const int64_t block_groups = std::max<int64_t>(1, block_bytes / group_bytes);
  detail::parallel_for(pf, groups, grain, [&](int64_t g0, int64_t g1) {
    for (int64_t gb = g0; gb < g1; gb += block_groups) {
      const int64_t ge = std::min(g1, gb + block_groups);
      for (int64_t m0 = 0; m0 < a.m; m0 += kMR) {
        const int mr = (int)std::min<int64_t>(kMR, a.m - m0);
        if constexpr (kWideTiles) {
          tile(m0, mr, gb * kNR, (int)(std::min(a.n, ge * kNR) - gb * kNR));
        } else {
          for (int64_t g = gb; g < ge; ++g) {
            const int64_t n0 = g * kNR;
            tile(m0, mr, n0, (int)std::min<int64_t>(kNR, a.n - n0));
          }
        }
        epilogue(a, m0, m0 + mr, gb * kNR, std::min(a.n, ge * kNR));
      }
    }
  });
}

// x rows quantized by `quantize` (the family's quantize_row for qx rows,
// quantize_row_K for q8_K rows) into the workspace, row stride xs.
std::byte* quantize_x(const MatmulArgs& a, ParallelFor& pf, int64_t xs, detail::QuantizeRowFn quantize) {
  auto* qx = static_cast<std::byte*>(a.workspace);
  detail::parallel_for(pf, a.m, std::max<int64_t>(1, 16384 / a.k), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) quantize(a.w_dtype, a.x + r * a.k, a.k, qx + r * xs);
  });
  return qx;
}

void quantized(const MatmulArgs& a, ParallelFor& pf, const detail::IsaKernels& isa, detail::QTileFn tile_fn) {
  const int64_t xs = detail::qx_row_bytes(a.k);
  std::byte* qx = quantize_x(a, pf, xs, isa.quantize_row);
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const int64_t block_bytes = traits(a.w_dtype).block_bytes;
  const bool x4 = a.w_layout == WeightLayout::rows_x4;
  const auto* w = static_cast<const std::byte*>(a.w);
  // Tiles start at multiples of kNR = kRowsX4Group rows, so a tile is one x4 group.
  static_assert(kNR == kRowsX4Group);
  // rows_x16 splits blocks, which these tiles do not read: a tile's rows
  // are gathered back to the standard layout first (a family without
  // panel kernels is only handed rows_x16 when asked to run it).
  const bool x16 = a.w_layout == WeightLayout::rows_x16;
  // (A buffer per tile: this path is never preferred, and a thread_local
  // one would outlive the call on the pool's threads.)
  blocked(a, pf, row_bytes, [&](int64_t m0, int mr, int64_t n0, int nr) {
    std::vector<std::byte> gathered;
    if (x16) {
      gathered.resize((size_t)(nr * row_bytes));
      read_rows(WeightLayout::rows_x16, a.w_dtype, a.n, a.k, w, n0, nr, gathered.data());
    }
    const detail::QWeightRows rows = x16  ? detail::QWeightRows{gathered.data(), row_bytes, block_bytes}
                                     : x4 ? detail::QWeightRows{w + n0 * row_bytes, block_bytes, nr * block_bytes}
                                          : detail::QWeightRows{w + n0 * row_bytes, row_bytes, block_bytes};
    tile_fn(qx + m0 * xs, xs, mr, rows, nr, a.k, a.y + m0 * a.n + n0, a.n);
  });
}

// The panel kernels (isa_kernels.h), or null where the family has none for t.
detail::QPanelFn qx_panel(const detail::IsaKernels& isa, DType t) {
  switch (t) {
    case DType::q8_0: return isa.q8_0_panel;
    case DType::q4_0: return isa.q4_0_panel;
    default: return nullptr;
  }
}

// x rows to q8 blocks in the workspace, then the panel kernel over groups of
// 16 weight rows, kPanelCall groups a call (their panels pass over the same
// x rows while those sit in L2). chunk_bytes per 4-row x tile, as blocked()
// counts it, sets the least work a parallel item covers; an item is at
// least one call where that leaves each thread two items or more.
void panel_quantized(const MatmulArgs& a, ParallelFor& pf, const detail::IsaKernels& isa, detail::QPanelFn panel_fn) {
  constexpr int64_t kPanelRows = 16, kPanelCall = 8;
  const int64_t xs = detail::qx_row_bytes(a.k);
  std::byte* qx = quantize_x(a, pf, xs, isa.quantize_row);
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const int64_t block_bytes = traits(a.w_dtype).block_bytes;
  const bool x4 = a.w_layout == WeightLayout::rows_x4, x16 = a.w_layout == WeightLayout::rows_x16;
  const auto* w = static_cast<const std::byte*>(a.w);
  static_assert(kPanelRows == kRowsX16Group);
  const int64_t groups = (a.n + kPanelRows - 1) / kPanelRows;
  const int64_t chunk_bytes = a.tile.chunk_bytes > 0 ? a.tile.chunk_bytes : kChunkBytes;
  const int64_t x_tiles = (a.m + kMR - 1) / kMR;
  int64_t grain = std::max<int64_t>(1, chunk_bytes / (kPanelRows * row_bytes * x_tiles));
  // Prefill items of whole calls (x rows reused across 8 groups); decode
  // keeps chunk_bytes' finer items, which balance better on a busy host.
  if (a.m >= 8 && groups >= 2 * pf.num_threads() * kPanelCall) grain = std::max(grain, kPanelCall);
  detail::parallel_for(pf, groups, grain, [&](int64_t g0, int64_t g1) {
    for (int64_t gc = g0; gc < g1; gc += kPanelCall) {
      const int64_t ge = std::min(g1, gc + kPanelCall);
      detail::QPanelRows rows[kPanelCall];
      for (int64_t g = gc; g < ge; ++g) {
        detail::QPanelRows& q = rows[g - gc];
        const int64_t n0 = g * kPanelRows;
        q.nr = (int)(std::min(a.n, n0 + kPanelRows) - n0);
        if (x16) {  // a group of width nr starts at its first row's standard offset
          q.packed = w + n0 * row_bytes;
          continue;
        }
        for (int r = 0; r < q.nr; ++r) {
          const int64_t row = n0 + r, group0 = row / kRowsX4Group * kRowsX4Group;
          // rows_x4 (core/weight_layout.h): slot row - group0 of a group of width min(4, n - group0).
          q.row[r] = x4 ? w + group0 * row_bytes + (row - group0) * block_bytes : w + row * row_bytes;
          q.block_stride[r] = x4 ? std::min<int64_t>(kRowsX4Group, a.n - group0) * block_bytes : block_bytes;
        }
      }
      panel_fn(qx, xs, a.m, rows, (int)(ge - gc), a.k, a.y + gc * kPanelRows, a.n);
      epilogue(a, 0, a.m, gc * kPanelRows, std::min(a.n, ge * kPanelRows));
    }
  });
}

// The tiles over qx rows (isa_kernels.h), or null for a type without them.
detail::QTileFn qx_tile(const detail::IsaKernels& isa, DType t) {
  switch (t) {
    case DType::q8_0: return isa.q8_0_tile;
    case DType::q4_0: return isa.q4_0_tile;
    case DType::q4_1: return isa.q4_1_tile;
    case DType::q5_0: return isa.q5_0_tile;
    case DType::q5_1: return isa.q5_1_tile;
    case DType::iq4_nl: return isa.iq4_nl_tile;
    default: return nullptr;
  }
}

// The tiles over q8_K rows (q8_K_activations.h), or null for a type without them.
detail::QTileFn q8_K_tile(const detail::IsaKernels& isa, DType t) {
  switch (t) {
    case DType::q2_K: return isa.q2_K_tile;
    case DType::q3_K: return isa.q3_K_tile;
    case DType::q4_K: return isa.q4_K_tile;
    case DType::q5_K: return isa.q5_K_tile;
    case DType::q6_K: return isa.q6_K_tile;
    case DType::iq4_xs: return isa.iq4_xs_tile;
    default: return nullptr;
  }
}

// The K-quant panel kernels (isa_kernels.h), or null for a type or family without them.
detail::KPanelFn k_panel(const detail::IsaKernels& isa, DType t) {
  switch (t) {
    case DType::q4_K: return isa.q4_K_panel;
    case DType::q5_K: return isa.q5_K_panel;
    case DType::q6_K: return isa.q6_K_panel;
    default: return nullptr;
  }
}

// Calls of call_rows weight rows a parallel item takes at least: the tiling
// pass's chunk_bytes per 4-row x tile, as blocked() counts it.
int64_t calls_per_item(const MatmulArgs& a, int64_t call_rows, int64_t row_bytes) {
  const int64_t chunk_bytes = a.tile.chunk_bytes > 0 ? a.tile.chunk_bytes : kChunkBytes;
  const int64_t x_tiles = (a.m + kMR - 1) / kMR;
  return std::max<int64_t>(1, chunk_bytes / (call_rows * row_bytes * x_tiles));
}

// x rows to q8_K, then the panel kernel over calls of kKPanelCallRows weight
// rows (each call passes all x rows over its panels, a k-slice at a time),
// the epilogue after each.
void q8_K_panels(const MatmulArgs& a, ParallelFor& pf, const detail::IsaKernels& isa, detail::KPanelFn panel_fn) {
  const int64_t xs = detail::q8_K_row_bytes(a.k);
  std::byte* qx = quantize_x(a, pf, xs, isa.quantize_row_K);
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const auto* w = static_cast<const std::byte*>(a.w);
  const int64_t grain = calls_per_item(a, kKPanelCallRows, row_bytes);
  detail::parallel_for(pf, (a.n + kKPanelCallRows - 1) / kKPanelCallRows, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t n0 = c * kKPanelCallRows, n1 = std::min(a.n, n0 + kKPanelCallRows);
      panel_fn(qx, xs, a.m, w + n0 * row_bytes, row_bytes, n1 - n0, a.k, a.y + n0, a.n);
      epilogue(a, 0, a.m, n0, n1);
    }
  });
}

// x rows to q8_K in the workspace, then the tiles over weight rows in the
// standard layout (rows_x4 holds only q8_0/q4_0); from kKPanelMinRows x rows
// the panels instead, where the family has them for the type.
void q8_K_quantized(const MatmulArgs& a, ParallelFor& pf, const detail::IsaKernels& isa, detail::QTileFn tile_fn) {
  if (detail::KPanelFn panel = k_panel(isa, a.w_dtype); panel != nullptr && a.m >= kKPanelMinRows)
    return q8_K_panels(a, pf, isa, panel);
  const int64_t xs = detail::q8_K_row_bytes(a.k);
  std::byte* qx = quantize_x(a, pf, xs, isa.quantize_row_K);
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const int64_t block_bytes = traits(a.w_dtype).block_bytes;
  const auto* w = static_cast<const std::byte*>(a.w);
  blocked<true>(a, pf, row_bytes, [&](int64_t m0, int mr, int64_t n0, int nr) {
    tile_fn(qx + m0 * xs, xs, mr, detail::QWeightRows{w + n0 * row_bytes, row_bytes, block_bytes}, nr, a.k,
            a.y + m0 * a.n + n0, a.n);
  });
}

void plain(const MatmulArgs& a, ParallelFor& pf, detail::FTileFn tile_fn) {
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const auto* w = static_cast<const std::byte*>(a.w);
  // rows_x16 (the float panels' layout) is gathered back to rows a tile at
  // a time, as quantized() does: slow, and never preferred here.
  const bool x16 = a.w_layout == WeightLayout::rows_x16;
  blocked(a, pf, row_bytes, [&](int64_t m0, int mr, int64_t n0, int nr) {
    std::vector<std::byte> gathered;
    if (x16) {
      gathered.resize((size_t)(nr * row_bytes));
      read_rows(WeightLayout::rows_x16, a.w_dtype, a.n, a.k, w, n0, nr, gathered.data());
    }
    tile_fn(a.x + m0 * a.k, a.k, mr, x16 ? gathered.data() : w + n0 * row_bytes, row_bytes, nr, a.k,
            a.y + m0 * a.n + n0, a.n);
  });
}

// The float panel kernel for t (isa_kernels.h), or null for a family without one.
detail::FPanelFn f_panel(const detail::IsaKernels& isa, DType t) {
  switch (t) {
    case DType::f32: return isa.f32_panel;
    case DType::f16: return isa.f16_panel;
    case DType::bf16: return isa.bf16_panel;
    default: return nullptr;
  }
}

// The ISA a float panel kernel's name gives: the bf16 dot's where bf16 runs it.
std::string f_panel_isa(DType t, const std::string& family) {
#if defined(TESSERA_X86)
  if (t == DType::bf16 && detail::bf16_panel_dots()) return "avx512bf16";
#else
  (void)t;
#endif
  return family;
}

// The float panel kernel over calls of up to kFPanelCallRows weight rows (16
// a panel). Calls shrink to two panels where the weight has too few rows to
// give every thread four calls. The tiling pass's attributes set the rest:
// chunk_bytes per 4-row x tile, as blocked() counts it, the least weight a
// parallel item covers (whole calls), and weight_block_bytes the k-slice,
// the call's turned panels that stay in cache while every x row passes.
void float_panels(const MatmulArgs& a, ParallelFor& pf, detail::FPanelFn panel_fn) {
  const int64_t row_bytes = (int64_t)bytes_for(a.w_dtype, a.k);
  const int64_t wanted = (a.n + 4 * pf.num_threads() - 1) / (4 * pf.num_threads());
  const int64_t call_rows = std::clamp<int64_t>((wanted + 15) / 16 * 16, 32, detail::kFPanelCallRows);
  const int64_t block_bytes = a.tile.weight_block_bytes > 0 ? a.tile.weight_block_bytes : kL2Block;
  const int64_t grain = calls_per_item(a, call_rows, row_bytes);
  const int64_t slice_dwords = std::clamp<int64_t>(block_bytes / (call_rows / 16 * 64) / 16 * 16, 16, detail::kFPanelSliceDwords);
  const auto* w = static_cast<const std::byte*>(a.w);
  // rows_x4 holds no plain type (check_weight_layout); rows_x16's groups
  // start at their first row's standard offset, as rows' rows do.
  const bool x16 = a.w_layout == WeightLayout::rows_x16;
  detail::parallel_for(pf, (a.n + call_rows - 1) / call_rows, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t n0 = c * call_rows, n1 = std::min(a.n, n0 + call_rows);
      panel_fn({.x = a.x, .ldx = a.k, .m = a.m, .w = w + n0 * row_bytes, .w_row_bytes = row_bytes, .n = n1 - n0,
                .k = a.k, .x16 = x16, .y = a.y + n0, .ldy = a.n, .slice_dwords = slice_dwords});
      epilogue(a, 0, a.m, n0, n1);
    }
  });
}

#if defined(TESSERA_ONEDNN)
constexpr bool kHaveOneDnn = true;
// oneDNN here is built on OpenMP, and an OpenMP team of its own would fight
// our pool for the same cores (and spin after each call). So the n columns
// are split over our ParallelFor and each chunk is one sequential sgemm: the
// calling thread's OpenMP team size is set to 1 when the OpenMP runtime that
// oneDNN loaded is there to ask (weak symbol; absent in non-OpenMP builds).
extern "C" void omp_set_num_threads(int) __attribute__((weak));

bool onednn_sgemm(const MatmulArgs& a, ParallelFor& pf) {
  const auto* w = static_cast<const float*>(a.w);
  bool ok = true;
  detail::parallel_for(pf, a.n, 64, [&](int64_t n0, int64_t n1) {
    if (omp_set_num_threads != nullptr) omp_set_num_threads(1);
    // Row-major y[m, n0:n1] = x[m, k] * w[n0:n1, k]^T.
    const dnnl_status_t st =
        dnnl_sgemm('N', 'T', a.m, n1 - n0, a.k, 1.0f, a.x, a.k, w + n0 * a.k, a.k, 0.0f, a.y + n0, a.n);
    if (st != dnnl_success) ok = false;
    else epilogue(a, 0, a.m, n0, n1);  // on failure the tiles recompute y and run the epilogue themselves
  });
  return ok;
}
#else
constexpr bool kHaveOneDnn = false;
bool onednn_sgemm(const MatmulArgs&, ParallelFor&) { return false; }
#endif

}  // namespace

bool matmul_supports(DType w_dtype) {
  if (w_dtype == DType::f32 || w_dtype == DType::f16 || w_dtype == DType::bf16) return true;
  const detail::IsaKernels& isa = detail::active_kernels();
  return qx_panel(isa, w_dtype) != nullptr || qx_tile(isa, w_dtype) != nullptr || q8_K_tile(isa, w_dtype) != nullptr;
}

size_t matmul_workspace_bytes(DType w_dtype, int64_t m, int64_t k) {
  const detail::IsaKernels& isa = detail::active_kernels();
  if (qx_panel(isa, w_dtype) != nullptr || qx_tile(isa, w_dtype) != nullptr) return (size_t)(m * detail::qx_row_bytes(k));
  if (q8_K_tile(isa, w_dtype) != nullptr) return (size_t)(m * detail::q8_K_row_bytes(k));
  return 0;
}

WeightLayout matmul_preferred_layout(DType w_dtype) {
  const detail::IsaKernels& isa = detail::active_kernels();
  return qx_panel(isa, w_dtype) != nullptr || f_panel(isa, w_dtype) != nullptr ? WeightLayout::rows_x16 : WeightLayout::rows;
}

std::string matmul_kernel_name(DType w_dtype, int64_t m, bool batch_invariant) {
  if (!matmul_supports(w_dtype)) return "unsupported";
  // A family that leaves this type to portable's tile is named portable here.
  const detail::IsaKernels& active = detail::active_kernels();
  const detail::IsaKernels& portable = detail::portable_kernels();
  const auto tile_of = [&](const detail::IsaKernels& t) -> const void* {
    switch (w_dtype) {
      case DType::f32: return reinterpret_cast<const void*>(t.f32_tile);
      case DType::f16: return reinterpret_cast<const void*>(t.f16_tile);
      case DType::bf16: return reinterpret_cast<const void*>(t.bf16_tile);
      default:
        if (detail::QTileFn q = qx_tile(t, w_dtype)) return reinterpret_cast<const void*>(q);
        return reinterpret_cast<const void*>(q8_K_tile(t, w_dtype));
    }
  };
  const std::string isa = tile_of(active) == tile_of(portable) ? portable.suffix : active.suffix;
  const std::string shape = m == 1 ? "gemv" : "gemm";
  if (k_panel(active, w_dtype) != nullptr && m >= kKPanelMinRows) return std::string(name(w_dtype)) + "_panel_gemm__" + isa;
  if (f_panel(active, w_dtype) != nullptr) return std::string(name(w_dtype)) + "_" + shape + "__" + f_panel_isa(w_dtype, isa);
  if (kHaveOneDnn && w_dtype == DType::f32 && m >= kOneDnnMinRows && !batch_invariant) return "f32_gemm__onednn";
  return std::string(name(w_dtype)) + "_" + shape + "__" + isa;
}

void matmul(const MatmulArgs& a, ParallelFor& pf) {
  if (a.m <= 0 || a.n <= 0) return;
  if (a.k == 0) {
    std::fill(a.y, a.y + a.m * a.n, 0.0f);
    epilogue(a, 0, a.m, 0, a.n);
    return;
  }
  const detail::IsaKernels& isa = detail::active_kernels();
  switch (a.w_dtype) {
    case DType::f32:
      if (isa.f32_panel != nullptr) return float_panels(a, pf, isa.f32_panel);
      if (kHaveOneDnn && a.m >= kOneDnnMinRows && a.tile.batch_invariant == 0 && a.w_layout == WeightLayout::rows &&
          onednn_sgemm(a, pf))
        return;
      return plain(a, pf, isa.f32_tile);
    case DType::f16:
      if (isa.f16_panel != nullptr) return float_panels(a, pf, isa.f16_panel);
      return plain(a, pf, isa.f16_tile);
    case DType::bf16:
      if (isa.bf16_panel != nullptr) return float_panels(a, pf, isa.bf16_panel);
      return plain(a, pf, isa.bf16_tile);
    default:
      if (detail::QPanelFn panel = qx_panel(isa, a.w_dtype)) return panel_quantized(a, pf, isa, panel);
      if (detail::QTileFn tile = qx_tile(isa, a.w_dtype)) return quantized(a, pf, isa, tile);
      if (detail::QTileFn tile = q8_K_tile(isa, a.w_dtype)) return q8_K_quantized(a, pf, isa, tile);
      return;  // matmul_supports admits no other type
  }
}

}  // namespace tessera::kernels::cpu
