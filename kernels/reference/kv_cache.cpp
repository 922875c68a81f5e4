#include "kernels/kv_element.h"
#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

// Each row rounded to the pool's type as it is stored (the block types
// quantize each 32 elements of the row with their own scale).
void kv_append(const KvAppendArgs& a) {
  const int64_t row = (int64_t)a.p.n_kv_heads * a.p.head_dim;
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const int64_t slot = a.slot_mapping[t];
    if (slot == kNoSlot) continue;
    store_kv_row(a.k_pool, a.kv_dtype, slot * row, a.k + t * row, row);
    store_kv_row(a.v_pool, a.kv_dtype, slot * row, a.v + t * row, row);
  }
}

}  // namespace tessera::kernels::reference
