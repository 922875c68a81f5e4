// KV append: each token's K and V rows copied to its slot in the pools.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

void kv_append(const KvAppendArgs& a, ParallelFor& pf) {
  const int64_t row = (int64_t)a.p.n_kv_heads * a.p.head_dim;
  const size_t row_bytes = (size_t)row * sizeof(float);
  detail::parallel_for(pf, a.n_tokens, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, row)),
                       [&](int64_t t0, int64_t t1) {
                         for (int64_t t = t0; t < t1; ++t) {
                           const int64_t slot = a.slot_mapping[t];
                           if (slot == kNoSlot) continue;
                           std::memcpy(a.k_pool + slot * row, a.k + t * row, row_bytes);
                           std::memcpy(a.v_pool + slot * row, a.v + t * row, row_bytes);
                         }
                       });
}

}  // namespace tessera::kernels::cpu
