#include "kernels/kv_element.h"
#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

// Each element rounded to the pool's type as it is stored.
void kv_append(const KvAppendArgs& a) {
  const int64_t row = (int64_t)a.p.n_kv_heads * a.p.head_dim;
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const int64_t slot = a.slot_mapping[t];
    if (slot == kNoSlot) continue;
    for (int64_t e = 0; e < row; ++e) {
      store_kv(a.k_pool, a.kv_dtype, slot * row + e, a.k[t * row + e]);
      store_kv(a.v_pool, a.kv_dtype, slot * row + e, a.v[t * row + e]);
    }
  }
}

}  // namespace tessera::kernels::reference
