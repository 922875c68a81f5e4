#include "engine/kv/kv_type.h"

#include <algorithm>
#include <string>

namespace tessera {

DType default_kv_dtype(const ModelWeights& w) {
  const bool all_f32 = std::all_of(w.tensors.begin(), w.tensors.end(), [](const WeightTensor& t) {
    return t.desc.shape.rank < 2 || t.desc.dtype == DType::f32;
  });
  return all_f32 ? DType::f32 : DType::f16;
}

namespace {
bool target_reads(const KernelTable& t, DType kv) {
  for (OpKind op : {OpKind::kv_append, OpKind::paged_attention}) {
    OpQuery q{op};
    q.kv_dtype = kv;
    if (!t.query(q).supported) return false;
  }
  return true;
}
}  // namespace

Expected<DType> resolve_kv_type(std::string_view kv_type, const ModelWeights& w, const KernelTable* target) {
  if (kv_type.empty() || kv_type == "auto") {
    const DType d = default_kv_dtype(w);
    return target && d != DType::f32 && !target_reads(*target, d) ? DType::f32 : d;
  }
  const auto t = dtype_from_name(kv_type);
  if (!t || (*t != DType::f32 && *t != DType::f16 && *t != DType::bf16 && *t != DType::q8_0 && *t != DType::fp8_e4m3))
    return invalid_argument("--kv-type: '" + std::string(kv_type) + "' is not one of auto, f32, f16, bf16, q8_0, fp8_e4m3");
  // The 8-bit types quantize 32 elements of one head's row a block.
  const int32_t head_dim = w.config.head_dim();
  if ((*t == DType::q8_0 || *t == DType::fp8_e4m3) && head_dim % 32 != 0)
    return invalid_argument("--kv-type " + std::string(kv_type) + ": the model's head_dim " + std::to_string(head_dim) +
                            " is not a multiple of 32 (the block of " + std::string(kv_type) + " KV pools); use f32, f16 or bf16");
  return *t;
}

}  // namespace tessera
