#include <cstring>

#include "core/ops.h"
#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

void all_reduce_sum(const float* const* ranks, int world, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int r = 0; r < world; ++r) s += ranks[r][i];
    y[i] = (float)s;
  }
}

void all_gather_columns(const float* const* parts, int world, int64_t rows, int64_t total, float* y) {
  for (int r = 0; r < world; ++r) {
    const ShardRange c = shard_range(total, world, r);
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t j = 0; j < c.size(); ++j) y[t * total + c.begin + j] = parts[r][t * c.size() + j];
  }
}

}  // namespace tessera::kernels::reference
