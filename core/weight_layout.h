#pragma once
// How a 2-D matmul weight's blocks are ordered in memory. The IR records it
// per weight (graph::Value::layout, printed {layout=...}), the repack pass
// chooses it per target, ModelRunner repacks once at load with the function
// below, and the plan tells the kernel (PlanTensor::layout -> MatmulArgs).
// Every layout holds the same blocks, byte for byte, only in another order,
// so a weight's size does not depend on its layout.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace tessera {

enum class WeightLayout : uint8_t {
  // GGUF's: row r's blocks one after another, row after row.
  rows,
  // Rows in groups of 4 (the CPU matmul's tile height): for each block
  // column b, the group's 4 rows' block b stored together, whole blocks
  // (f16 scale and quants), so one tile reads one contiguous stream. A last
  // group of n % 4 rows is interleaved the same way over its own rows (no
  // padding): group g of width w = min(4, n - 4g) starts at row 4g's
  // standard offset, and row 4g + r's block b sits at (b * w + r) blocks past it.
  rows_x4,
};
inline constexpr int kRowsX4Group = 4;

std::string_view name(WeightLayout l);
std::optional<WeightLayout> weight_layout_from_name(std::string_view name);

// Whether `layout` can hold a weight of this dtype and shape; the message
// names `what` (the weight) and what was expected.
Status check_weight_layout(WeightLayout layout, DType dtype, const Shape& shape, std::string_view what);

// The bytes of a [rows, cols] weight of `dtype` in the standard layout,
// reordered into rows_x4 (or back, from_rows_x4). `bytes` must be exactly
// the weight's size.
Expected<std::vector<std::byte>> repack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes);
Expected<std::vector<std::byte>> unpack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes);

}  // namespace tessera
