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
  if (kv_type == "f32") return DType::f32;
  if (kv_type == "f16") return DType::f16;
  if (kv_type == "bf16") return DType::bf16;
  return invalid_argument("--kv-type: '" + std::string(kv_type) + "' is not one of auto, f32, f16, bf16");
}

}  // namespace tessera
