#pragma once
// Private to kernels/cpu: the loops around a quantized tile's inner block
// step, written once for every ISA family and weight format. An ISA file
// describes a format as a kernel type K and calls run_tile(K{...}, ...);
// the driver walks the tile's x rows in register-sized passes, its weight
// rows one or four at a time, their blocks in order (pulling the weight
// bytes one tile further on into L1 as it goes: decode streams weights
// faster than the hardware prefetcher alone fetches them), and stores the
// sums. Every output takes the same steps in the same order whatever the
// pass it falls in, so a row's bits depend neither on m nor on its place.
//
// K provides:
//   using Block;                  the weight block (core/dtype.h)
//   static constexpr int kRows;   weight rows one step decodes together: 1,
//                                 or 4 (a tail tile's empty slots repeat its first row)
//   static constexpr int kMaxMR;  x rows one pass carries at most (1..4: the register budget)
//   static constexpr bool kPrefetch;
//   using XRow;                   an x row's view; XRow x_row(const std::byte* row, int64_t nb) const
//   using Acc;                    one x row's sums over the step's weight rows; Acc{} is zero
//   template <int MR>
//   void step(const BlockRow<Block> (&w)[kRows], int64_t b, const XRow (&x)[MR], Acc (&acc)[MR]) const;
//   void store(const Acc& acc, int nr, float* y) const;   y[r] for r < nr (nr <= kRows)
// (Included under each ISA file's target flags; internal linkage keeps each copy in its file.)
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/isa_kernels.h"

namespace tessera::kernels::cpu::detail {
namespace {

// How far ahead of its reads a tile prefetches weights, at least. One tile
// (4 rows) on was the best of 2, 4, 8 and 16 rows for 8 KB rows (q4_K,
// k = 14336), but a 2048-wide row's tile is 4.6 KB, about one memory
// latency of reading at 25 GB/s: decode of a dim-2048 model's matmuls ran
// at half the read roof. Into L1 (prefetcht0), not L2: once a q4_K
// four-row step had shed its per-row scalar work and repeated x loads,
// prefetcht0 32 KiB ahead took two threads from 0.64–0.71 to 0.71–0.88 of
// the read roof in alternating runs (q6_K 0.72–0.77 to 0.80–0.90);
// 64 and 128 KiB ahead, into L1 or L2, and 16 KiB, were slower.
constexpr int64_t kPrefetchAhead = 32 * 1024;

template <int MR, typename K>
void tile_pass(const K& k, const std::byte* x, int64_t xs, const QWeightRows& w, int nr, int64_t nb, float* y,
               int64_t ldy) {
  using Block = typename K::Block;
  constexpr int64_t kBlockBytes = sizeof(Block);
  typename K::XRow xr[MR];
  for (int i = 0; i < MR; ++i) xr[i] = k.x_row(x + i * xs, nb);
  for (int r0 = 0; r0 < nr; r0 += K::kRows) {
    BlockRow<Block> rows[K::kRows];
    for (int j = 0; j < K::kRows; ++j) rows[j] = {w.base + (r0 + j < nr ? r0 + j : r0) * w.row_stride, w.block_stride};
    // The bytes one tile (4 rows) on from these rows, or kPrefetchAhead on
    // where a tile is shorter, read at the pace this step reads its own: in
    // the standard layout row r0 + 4 onwards, in rows_x4 the next group.
    const char* span = reinterpret_cast<const char*>(w.base) + r0 * nb * kBlockBytes +
                       std::max<int64_t>(4 * nb * kBlockBytes, kPrefetchAhead);
    typename K::Acc acc[MR]{};
    for (int64_t b = 0; b < nb; ++b) {
      if constexpr (K::kPrefetch)
        for (int64_t off = 0; off < K::kRows * kBlockBytes; off += 64)
          __builtin_prefetch(span + b * K::kRows * kBlockBytes + off, 0, 3);  // to L1 (prefetcht0)
      k.template step<MR>(rows, b, xr, acc);
    }
    const int n = nr - r0 < K::kRows ? nr - r0 : K::kRows;
    for (int i = 0; i < MR; ++i) k.store(acc[i], n, y + i * ldy + r0);
  }
}

// The passes of fewer than kMaxMR rows, one instantiation per count.
template <int MR, typename K>
void tail_pass(const K& k, int rem, const std::byte* x, int64_t xs, const QWeightRows& w, int nr, int64_t nb, float* y,
               int64_t ldy) {
  if constexpr (MR >= 1) {
    if (rem == MR) return tile_pass<MR>(k, x, xs, w, nr, nb, y, ldy);
    tail_pass<MR - 1>(k, rem, x, xs, w, nr, nb, y, ldy);
  }
}

// y[i * ldy + r] = dot(x row i, w row r) for i < mr, r < nr (isa_kernels.h's
// QTileFn), nb blocks a row.
template <typename K>
void run_tile(const K& k, const std::byte* x, int64_t xs, int mr, const QWeightRows& w, int nr, int64_t nb, float* y,
              int64_t ldy) {
  int i = 0;
  for (; i + K::kMaxMR <= mr; i += K::kMaxMR) tile_pass<K::kMaxMR>(k, x + i * xs, xs, w, nr, nb, y + i * ldy, ldy);
  if (i < mr) tail_pass<K::kMaxMR - 1>(k, mr - i, x + i * xs, xs, w, nr, nb, y + i * ldy, ldy);
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
