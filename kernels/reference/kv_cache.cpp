#include <cstring>

#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

void kv_append(const KvAppendArgs& a) {
  const int64_t row = (int64_t)a.p.n_kv_heads * a.p.head_dim;
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const int64_t slot = a.slot_mapping[t];
    if (slot == kNoSlot) continue;
    std::memcpy(a.k_pool + slot * row, a.k + t * row, (size_t)row * sizeof(float));
    std::memcpy(a.v_pool + slot * row, a.v + t * row, (size_t)row * sizeof(float));
  }
}

}  // namespace tessera::kernels::reference
