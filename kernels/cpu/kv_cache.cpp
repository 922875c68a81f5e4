// KV append: each token's K and V rows stored at its slot in the pools, as
// they are (f32 pools), rounded to nearest even (f16, bf16: the ISA's
// conversion, bit for bit as core/half.h's), or quantized per 32 elements
// (q8_0, fp8_e4m3: kv_element.h's scalar code, one row a token, so the bytes
// are the reference's).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"
#include "kernels/kv_element.h"

namespace tessera::kernels::cpu {

void kv_append(const KvAppendArgs& a, ParallelFor& pf) {
  const int64_t row = (int64_t)a.p.n_kv_heads * a.p.head_dim;
  const detail::IsaKernels& isa = detail::active_kernels();
  const auto narrow = a.kv_dtype == DType::f16 ? isa.f32_to_f16 : a.kv_dtype == DType::bf16 ? isa.f32_to_bf16 : nullptr;
  const auto store = [&](void* pool, const float* src, int64_t slot) {
    if (narrow)
      narrow(src, static_cast<uint16_t*>(pool) + slot * row, row);
    else if (is_kv_block_type(a.kv_dtype))
      store_kv_row(pool, a.kv_dtype, slot * row, src, row);
    else
      std::memcpy(static_cast<float*>(pool) + slot * row, src, (size_t)row * sizeof(float));
  };
  detail::parallel_for(pf, a.n_tokens, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, row)),
                       [&](int64_t t0, int64_t t1) {
                         for (int64_t t = t0; t < t1; ++t) {
                           const int64_t slot = a.slot_mapping[t];
                           if (slot == kNoSlot) continue;
                           store(a.k_pool, a.k + t * row, slot);
                           store(a.v_pool, a.v + t * row, slot);
                         }
                       });
}

}  // namespace tessera::kernels::cpu
