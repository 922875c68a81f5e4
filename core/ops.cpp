#include "core/ops.h"

#include <array>

namespace tessera {

namespace {
constexpr std::array<std::string_view, kOpKindCount> kNames = {
    "embedding", "rms_norm", "matmul", "rope", "kv_append", "paged_attention",
    "silu_mul",  "add",      "softmax", "argmax", "gather_rows", "matmul_add",
    "matmul_silu_mul", "matmul_qkv", "rope_kv_append", "add_rms_norm", "matmul_add_rms_norm",
    "copy",
    "mul", "silu", "gelu", "bias_add", "elementwise", "matmul_epilogue",
    "head_rms_norm", "scale", "softcap", "gelu_mul",
    "all_reduce", "all_gather", "send", "recv",
};
constexpr std::array<std::string_view, kEwOpCount> kEwNames = {"add", "mul", "silu", "gelu", "bias_add", "gelu_f16"};
}  // namespace

std::string_view name(OpKind op) { return kNames[(size_t)op]; }

std::optional<OpKind> op_from_name(std::string_view n) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == n) return static_cast<OpKind>(i);
  return std::nullopt;
}

bool is_matmul_family(OpKind op) {
  return op == OpKind::matmul || op == OpKind::matmul_add || op == OpKind::matmul_silu_mul || op == OpKind::matmul_qkv ||
         op == OpKind::matmul_add_rms_norm || op == OpKind::matmul_epilogue;
}

bool may_read_reordered_weight(OpKind op, size_t input) {
  return (input == 1 && is_matmul_family(op)) || (input == 0 && op == OpKind::embedding);
}

std::string_view name(EwOp op) { return kEwNames[(size_t)op]; }

std::optional<EwOp> ew_op_from_name(std::string_view n) {
  for (size_t i = 0; i < kEwNames.size(); ++i)
    if (kEwNames[i] == n) return static_cast<EwOp>(i);
  return std::nullopt;
}

bool is_unary(EwOp op) { return op == EwOp::silu || op == EwOp::gelu || op == EwOp::gelu_f16; }

int aliased_input(OpKind op, int output_index) {
  if (op == OpKind::kv_append) return 3 + output_index;
  if (op == OpKind::rope_kv_append && output_index >= 1) return 4 + output_index;
  return -1;
}

bool has_side_effects(OpKind op) {
  return op == OpKind::kv_append || op == OpKind::rope_kv_append || op == OpKind::send || op == OpKind::recv;
}

}  // namespace tessera
