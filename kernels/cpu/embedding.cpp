// Embedding lookup and row gather: one row per item, split over tokens.
#include <algorithm>
#include <cstring>

#include "core/quant.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

namespace {

// n elements of a row held in the standard layout, widened to f32.
void widen(const detail::IsaKernels& isa, DType t, const std::byte* src, float* dst, int64_t n) {
  switch (t) {
    case DType::f32: std::memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case DType::f16: isa.f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n); break;
    case DType::bf16: isa.bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n); break;
    default: dequantize_row(t, src, dst, n); break;
  }
}

}  // namespace

void embedding(const EmbeddingArgs& a, ParallelFor& pf) {
  const detail::IsaKernels& isa = detail::active_kernels();
  const uint64_t row_bytes = bytes_for(a.table_dtype, a.dim);
  const auto* table = static_cast<const std::byte*>(a.table);
  // A reordered table (a tied classifier's) is gathered a piece of a row at
  // a time into a buffer on the stack: a step allocates nothing.
  constexpr int64_t kPieceBytes = 1024;
  const int64_t block_elems = layout_block_elems(a.table_dtype), blocks = a.dim / block_elems;
  const int64_t block_bytes = (int64_t)bytes_for(a.table_dtype, block_elems);
  const int64_t piece_blocks = std::max<int64_t>(1, kPieceBytes / block_bytes);
  detail::parallel_for(pf, a.n_tokens, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, a.dim)), [&](int64_t t0, int64_t t1) {
    alignas(64) std::byte piece[kPieceBytes];
    for (int64_t t = t0; t < t1; ++t) {
      float* dst = a.out + t * a.dim;
      if (a.table_layout == WeightLayout::rows) {
        widen(isa, a.table_dtype, table + (uint64_t)a.ids[t] * row_bytes, dst, a.dim);
        continue;
      }
      for (int64_t b0 = 0; b0 < blocks; b0 += piece_blocks) {
        const int64_t nb = std::min(piece_blocks, blocks - b0);
        read_row_blocks(a.table_layout, a.table_dtype, a.vocab, a.dim, table, a.ids[t], b0, nb, piece);
        widen(isa, a.table_dtype, piece, dst + b0 * block_elems, nb * block_elems);
      }
    }
  });
}

void gather_rows(const GatherRowsArgs& a, ParallelFor& pf) {
  detail::parallel_for(
      pf, a.n_rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, a.row_bytes)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          std::memcpy(a.out + r * a.row_bytes, a.x + (int64_t)a.rows[r] * a.row_bytes, (size_t)a.row_bytes);
      });
}

}  // namespace tessera::kernels::cpu
