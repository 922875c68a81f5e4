#include "core/weight_layout.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tessera {

std::string_view name(WeightLayout l) {
  switch (l) {
    case WeightLayout::rows: return "rows";
    case WeightLayout::rows_x4: return "rows_x4";
  }
  return "?";
}

std::optional<WeightLayout> weight_layout_from_name(std::string_view n) {
  if (n == "rows") return WeightLayout::rows;
  if (n == "rows_x4") return WeightLayout::rows_x4;
  return std::nullopt;
}

Status check_weight_layout(WeightLayout layout, DType dtype, const Shape& shape, std::string_view what) {
  if (layout == WeightLayout::rows) return Status::ok();
  const std::string w(what);
  if (dtype != DType::q8_0 && dtype != DType::q4_0)
    return invalid_argument(w + ": layout=" + std::string(name(layout)) + " holds q8_0 or q4_0 weights, got " +
                            std::string(name(dtype)));
  if (shape.rank != 2 || shape[0] < 1 || shape[1] < 1 || !is_whole_blocks(dtype, shape[1]))
    return invalid_argument(w + ": layout=" + std::string(name(layout)) +
                            " holds a 2-D weight of whole blocks per row, got shape " + shape.to_string());
  return Status::ok();
}

namespace {

// Copies every block between the two orders; to_x4 picks the direction.
Expected<std::vector<std::byte>> reorder(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes,
                                         bool to_x4) {
  TS_TRY(check_weight_layout(WeightLayout::rows_x4, dtype, Shape{rows, cols}, "repack_rows_x4"));
  const int64_t bb = traits(dtype).block_bytes, nb = cols / traits(dtype).block_elems, row_bytes = nb * bb;
  if ((int64_t)bytes.size() != rows * row_bytes)
    return invalid_argument("repack_rows_x4: " + std::to_string(bytes.size()) + " bytes; a " + std::string(name(dtype)) +
                            "[" + std::to_string(rows) + ", " + std::to_string(cols) + "] weight has " +
                            std::to_string(rows * row_bytes));
  std::vector<std::byte> out(bytes.size());
  for (int64_t g0 = 0; g0 < rows; g0 += kRowsX4Group) {
    const int64_t width = std::min<int64_t>(kRowsX4Group, rows - g0);
    const int64_t base = g0 * row_bytes;
    for (int64_t r = 0; r < width; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t standard = base + r * row_bytes + b * bb, x4 = base + (b * width + r) * bb;
        std::memcpy(out.data() + (to_x4 ? x4 : standard), bytes.data() + (to_x4 ? standard : x4), (size_t)bb);
      }
  }
  return out;
}

}  // namespace

Expected<std::vector<std::byte>> repack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes) {
  return reorder(dtype, rows, cols, bytes, true);
}

Expected<std::vector<std::byte>> unpack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes) {
  return reorder(dtype, rows, cols, bytes, false);
}

}  // namespace tessera
