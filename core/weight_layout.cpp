#include "core/weight_layout.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tessera {

std::string_view name(WeightLayout l) {
  switch (l) {
    case WeightLayout::rows: return "rows";
    case WeightLayout::rows_x4: return "rows_x4";
    case WeightLayout::rows_x16: return "rows_x16";
  }
  return "?";
}

std::optional<WeightLayout> weight_layout_from_name(std::string_view n) {
  if (n == "rows") return WeightLayout::rows;
  if (n == "rows_x4") return WeightLayout::rows_x4;
  if (n == "rows_x16") return WeightLayout::rows_x16;
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

// Where row r's block b lies in a layout, as byte offsets of its pieces: the
// scale (2 bytes) and each code dword (the rest of the block, 4 bytes each).
// Every layout here splits a block into these pieces and nothing smaller.
struct PieceOffsets {
  int64_t row_bytes, block_bytes;
  int64_t rows;
  WeightLayout layout;

  int64_t group_of(int64_t r) const {
    const int64_t g = layout == WeightLayout::rows_x4 ? kRowsX4Group : kRowsX16Group;
    return r / g * g;
  }
  int64_t width(int64_t g0) const {
    return std::min<int64_t>(layout == WeightLayout::rows_x4 ? kRowsX4Group : kRowsX16Group, rows - g0);
  }
  // Offset of piece p of row r's block b: p = 0 the scale, p = 1 + j code dword j.
  int64_t piece(int64_t r, int64_t b, int64_t p) const {
    const int64_t in_block = p == 0 ? 0 : 2 + 4 * (p - 1);
    switch (layout) {
      case WeightLayout::rows: return r * row_bytes + b * block_bytes + in_block;
      case WeightLayout::rows_x4: {
        const int64_t g0 = group_of(r);
        return g0 * row_bytes + (b * width(g0) + (r - g0)) * block_bytes + in_block;
      }
      case WeightLayout::rows_x16: {
        const int64_t g0 = group_of(r), w = width(g0), base = g0 * row_bytes + b * w * block_bytes;
        return p == 0 ? base + 2 * (r - g0) : base + 2 * w + 4 * ((p - 1) * w + (r - g0));
      }
    }
    return 0;
  }
};

// Rows [r0, r0 + nr) of a weight held as `from` to rows [r1, r1 + nr) of
// one held as `to`, piece by piece (q8_0 and q4_0 blocks are a 2-byte scale
// and whole code dwords).
void copy_rows(const PieceOffsets& from, const std::byte* in, int64_t r0, const PieceOffsets& to, std::byte* out,
               int64_t r1, int64_t nr) {
  const int64_t nb = from.row_bytes / from.block_bytes, pieces = 1 + (from.block_bytes - 2) / 4;
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t p = 0; p < pieces; ++p)
        std::memcpy(out + to.piece(r1 + r, b, p), in + from.piece(r0 + r, b, p), p == 0 ? 2 : 4);
}

}  // namespace

void read_rows(WeightLayout layout, DType dtype, int64_t rows, int64_t cols, const std::byte* bytes, int64_t r0,
               int64_t nr, std::byte* dst) {
  const int64_t bb = traits(dtype).block_bytes, row_bytes = cols / traits(dtype).block_elems * bb;
  if (layout == WeightLayout::rows) {
    std::memcpy(dst, bytes + r0 * row_bytes, (size_t)(nr * row_bytes));
    return;
  }
  copy_rows({row_bytes, bb, rows, layout}, bytes, r0, {row_bytes, bb, nr, WeightLayout::rows}, dst, 0, nr);
}

Expected<std::vector<std::byte>> relayout(WeightLayout from, WeightLayout to, DType dtype, int64_t rows, int64_t cols,
                                          std::span<const std::byte> bytes) {
  const std::string what = "repack to " + std::string(name(to));
  const WeightLayout checked = to != WeightLayout::rows ? to : from;
  TS_TRY(check_weight_layout(checked, dtype, Shape{rows, cols}, what));
  const int64_t bb = traits(dtype).block_bytes, nb = cols / traits(dtype).block_elems, row_bytes = nb * bb;
  if ((int64_t)bytes.size() != rows * row_bytes)
    return invalid_argument(what + ": " + std::to_string(bytes.size()) + " bytes; a " + std::string(name(dtype)) + "[" +
                            std::to_string(rows) + ", " + std::to_string(cols) + "] weight has " +
                            std::to_string(rows * row_bytes));
  std::vector<std::byte> out(bytes.size());
  if (from == to) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  copy_rows({row_bytes, bb, rows, from}, bytes.data(), 0, {row_bytes, bb, rows, to}, out.data(), 0, rows);
  return out;
}

Expected<std::vector<std::byte>> repack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes) {
  return relayout(WeightLayout::rows, WeightLayout::rows_x4, dtype, rows, cols, bytes);
}

Expected<std::vector<std::byte>> unpack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes) {
  return relayout(WeightLayout::rows_x4, WeightLayout::rows, dtype, rows, cols, bytes);
}

Expected<std::vector<std::byte>> repack_rows_x16(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes) {
  return relayout(WeightLayout::rows, WeightLayout::rows_x16, dtype, rows, cols, bytes);
}

Expected<std::vector<std::byte>> unpack_rows_x16(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes) {
  return relayout(WeightLayout::rows_x16, WeightLayout::rows, dtype, rows, cols, bytes);
}

}  // namespace tessera
