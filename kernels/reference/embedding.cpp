#include <cstring>
#include <vector>

#include "core/quant.h"
#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

void embedding(const EmbeddingArgs& a) {
  const uint64_t row_bytes = bytes_for(a.table_dtype, a.dim);
  const auto* table = static_cast<const std::byte*>(a.table);
  std::vector<std::byte> row(row_bytes);
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    read_rows(a.table_layout, a.table_dtype, a.vocab, a.dim, table, a.ids[t], 1, row.data());
    dequantize_row(a.table_dtype, row.data(), a.out + t * a.dim, a.dim);
  }
}

void gather_rows(const GatherRowsArgs& a) {
  for (int64_t r = 0; r < a.n_rows; ++r)
    std::memcpy(a.out + r * a.row_bytes, a.x + (int64_t)a.rows[r] * a.row_bytes, (size_t)a.row_bytes);
}

}  // namespace tessera::kernels::reference
