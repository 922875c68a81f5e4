#include "core/ops.h"

#include <array>

namespace tessera {

namespace {
constexpr std::array<std::string_view, kOpKindCount> kNames = {
    "embedding", "rms_norm", "matmul", "rope", "kv_append", "paged_attention",
    "silu_mul",  "add",      "softmax", "argmax", "gather_rows",
};
}  // namespace

std::string_view name(OpKind op) { return kNames[(size_t)op]; }

std::optional<OpKind> op_from_name(std::string_view n) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == n) return static_cast<OpKind>(i);
  return std::nullopt;
}

}  // namespace tessera
