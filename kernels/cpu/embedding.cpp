// Embedding lookup and row gather: one row per item, split over tokens.
#include <algorithm>
#include <cstring>

#include "core/quant.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

void embedding(const EmbeddingArgs& a, ParallelFor& pf) {
  const detail::IsaKernels& isa = detail::active_kernels();
  const uint64_t row_bytes = bytes_for(a.table_dtype, a.dim);
  const auto* table = static_cast<const std::byte*>(a.table);
  detail::parallel_for(pf, a.n_tokens, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, a.dim)),
                       [&](int64_t t0, int64_t t1) {
                         for (int64_t t = t0; t < t1; ++t) {
                           const std::byte* src = table + (uint64_t)a.ids[t] * row_bytes;
                           float* dst = a.out + t * a.dim;
                           switch (a.table_dtype) {
                             case DType::f32: std::memcpy(dst, src, (size_t)a.dim * sizeof(float)); break;
                             case DType::f16: isa.f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, a.dim); break;
                             case DType::bf16:
                               isa.bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, a.dim);
                               break;
                             default: dequantize_row(a.table_dtype, src, dst, a.dim); break;
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
