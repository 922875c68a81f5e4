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

namespace {

bool is_plain(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

}  // namespace

Status check_weight_layout(WeightLayout layout, DType dtype, const Shape& shape, std::string_view what) {
  if (layout == WeightLayout::rows) return Status::ok();
  const std::string w(what), l(name(layout));
  const bool plain_ok = layout == WeightLayout::rows_x16 && is_plain(dtype);
  if (dtype != DType::q8_0 && dtype != DType::q4_0 && !plain_ok)
    return invalid_argument(w + ": layout=" + l +
                            (layout == WeightLayout::rows_x16 ? " holds q8_0, q4_0, f32, f16 or bf16 weights, got "
                                                              : " holds q8_0 or q4_0 weights, got ") +
                            std::string(name(dtype)));
  if (shape.rank != 2 || shape[0] < 1 || shape[1] < 1 || !is_whole_blocks(dtype, shape[1]))
    return invalid_argument(w + ": layout=" + l + " holds a 2-D weight of whole blocks per row, got shape " +
                            shape.to_string());
  if (is_plain(dtype) && bytes_for(dtype, shape[1]) % 4 != 0)
    return invalid_argument(w + ": layout=" + l + " holds " + std::string(name(dtype)) +
                            " rows of whole 4-byte words (an even row width), got shape " + shape.to_string());
  return Status::ok();
}

namespace {

// Where row r's block b lies in a layout, as byte offsets of its pieces: the
// scale (2 bytes) and each code dword (the rest of the block, 4 bytes each).
// Every layout here splits a block into these pieces and nothing smaller.
// f32, f16 and bf16 rows (rows_x16 only) are taken as blocks of one dword
// and no scale: dword b of row r is block b's one piece.
struct PieceOffsets {
  int64_t row_bytes, block_bytes;
  int64_t rows;
  WeightLayout layout;
  int64_t scale_bytes = 2;  // 0 for f32, f16, bf16

  int64_t group_of(int64_t r) const {
    const int64_t g = layout == WeightLayout::rows_x4 ? kRowsX4Group : kRowsX16Group;
    return r / g * g;
  }
  int64_t width(int64_t g0) const {
    return std::min<int64_t>(layout == WeightLayout::rows_x4 ? kRowsX4Group : kRowsX16Group, rows - g0);
  }
  int64_t pieces() const { return (scale_bytes > 0 ? 1 : 0) + (block_bytes - scale_bytes) / 4; }
  int64_t piece_bytes(int64_t p) const { return scale_bytes > 0 && p == 0 ? scale_bytes : 4; }
  // Offset of piece p of row r's block b: with a scale, p = 0 the scale and
  // p = 1 + j code dword j; without, p = j dword j.
  int64_t piece(int64_t r, int64_t b, int64_t p) const {
    const bool scaled = scale_bytes > 0;
    const int64_t dword = scaled ? p - 1 : p;
    const int64_t in_block = scaled && p == 0 ? 0 : scale_bytes + 4 * dword;
    switch (layout) {
      case WeightLayout::rows: return r * row_bytes + b * block_bytes + in_block;
      case WeightLayout::rows_x4: {
        const int64_t g0 = group_of(r);
        return g0 * row_bytes + (b * width(g0) + (r - g0)) * block_bytes + in_block;
      }
      case WeightLayout::rows_x16: {
        const int64_t g0 = group_of(r), w = width(g0), base = g0 * row_bytes + b * w * block_bytes;
        return scaled && p == 0 ? base + scale_bytes * (r - g0) : base + scale_bytes * w + 4 * (dword * w + (r - g0));
      }
    }
    return 0;
  }
};

// A [rows, cols] weight of dtype held in layout, as pieces.
PieceOffsets pieces_of(DType dtype, int64_t rows, int64_t cols, WeightLayout layout) {
  const int64_t row_bytes = (int64_t)bytes_for(dtype, cols);
  if (is_plain(dtype)) return {row_bytes, 4, rows, layout, 0};
  return {row_bytes, traits(dtype).block_bytes, rows, layout, 2};
}

// Rows [r0, r0 + nr) of a weight held as `from` to rows [r1, r1 + nr) of
// one held as `to`, piece by piece (q8_0 and q4_0 blocks are a 2-byte scale
// and whole code dwords).
void copy_rows(const PieceOffsets& from, const std::byte* in, int64_t r0, const PieceOffsets& to, std::byte* out,
               int64_t r1, int64_t nr) {
  const int64_t nb = from.row_bytes / from.block_bytes, pieces = from.pieces();
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t p = 0; p < pieces; ++p)
        std::memcpy(out + to.piece(r1 + r, b, p), in + from.piece(r0 + r, b, p), (size_t)from.piece_bytes(p));
}

// rows to rows_x16 (or back) for f32, f16 and bf16: a dword transpose per
// group of 16 rows, each group's 16 rows (in L2) written whole. The
// piece-by-piece copy above takes seconds for a multi-GB model at load.
void plain_rows_x16(bool to_x16, int64_t rows, int64_t row_bytes, const std::byte* in, std::byte* out) {
  const int64_t dwords = row_bytes / 4;
  for (int64_t g0 = 0; g0 < rows; g0 += kRowsX16Group) {
    const int64_t w = std::min<int64_t>(kRowsX16Group, rows - g0);
    const std::byte* src = in + g0 * row_bytes;
    std::byte* dst = out + g0 * row_bytes;
    for (int64_t r = 0; r < w; ++r)
      for (int64_t j = 0; j < dwords; ++j) {
        const int64_t at_rows = 4 * (r * dwords + j), at_x16 = 4 * (j * w + r);
        std::memcpy(dst + (to_x16 ? at_x16 : at_rows), src + (to_x16 ? at_rows : at_x16), 4);
      }
  }
}

}  // namespace

void read_rows(WeightLayout layout, DType dtype, int64_t rows, int64_t cols, const std::byte* bytes, int64_t r0,
               int64_t nr, std::byte* dst) {
  const int64_t row_bytes = (int64_t)bytes_for(dtype, cols);
  if (layout == WeightLayout::rows) {
    std::memcpy(dst, bytes + r0 * row_bytes, (size_t)(nr * row_bytes));
    return;
  }
  const int64_t blocks = cols / layout_block_elems(dtype);
  for (int64_t r = r0; r < r0 + nr; ++r) read_row_blocks(layout, dtype, rows, cols, bytes, r, 0, blocks, dst + (r - r0) * row_bytes);
}

int64_t layout_block_elems(DType dtype) { return is_plain(dtype) ? 4 / (int64_t)traits(dtype).block_bytes : traits(dtype).block_elems; }

void read_row_blocks(WeightLayout layout, DType dtype, int64_t rows, int64_t cols, const std::byte* bytes, int64_t r,
                     int64_t b0, int64_t nb, std::byte* dst) {
  const PieceOffsets from = pieces_of(dtype, rows, cols, layout);
  if (layout == WeightLayout::rows) {
    std::memcpy(dst, bytes + r * from.row_bytes + b0 * from.block_bytes, (size_t)(nb * from.block_bytes));
  } else if (from.scale_bytes == 0) {  // f32/f16/bf16 rows_x16: dword b of row r a stride of its group's width apart
    const int64_t g0 = from.group_of(r), w = from.width(g0);
    const std::byte* src = bytes + g0 * from.row_bytes + 4 * (b0 * w + (r - g0));
    for (int64_t b = 0; b < nb; ++b) std::memcpy(dst + 4 * b, src + 4 * b * w, 4);
  } else {
    const int64_t pieces = from.pieces();
    const PieceOffsets to = pieces_of(dtype, 1, nb * traits(dtype).block_elems, WeightLayout::rows);
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t p = 0; p < pieces; ++p)
        std::memcpy(dst + to.piece(0, b, p), bytes + from.piece(r, b0 + b, p), (size_t)from.piece_bytes(p));
  }
}

Status relayout_into(WeightLayout from, WeightLayout to, DType dtype, int64_t rows, int64_t cols,
                     std::span<const std::byte> bytes, std::span<std::byte> out) {
  const std::string what = "repack to " + std::string(name(to));
  const WeightLayout checked = to != WeightLayout::rows ? to : from;
  TS_TRY(check_weight_layout(checked, dtype, Shape{rows, cols}, what));
  const int64_t row_bytes = (int64_t)bytes_for(dtype, cols);
  for (const size_t n : {bytes.size(), out.size()})
    if ((int64_t)n != rows * row_bytes)
      return invalid_argument(what + ": " + std::to_string(n) + " bytes; a " + std::string(name(dtype)) + "[" +
                              std::to_string(rows) + ", " + std::to_string(cols) + "] weight has " +
                              std::to_string(rows * row_bytes));
  if (from == to) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return Status::ok();
  }
  const bool plain_x16 = is_plain(dtype) && (from == WeightLayout::rows || to == WeightLayout::rows) &&
                         (from == WeightLayout::rows_x16 || to == WeightLayout::rows_x16);
  if (plain_x16)
    plain_rows_x16(to == WeightLayout::rows_x16, rows, row_bytes, bytes.data(), out.data());
  else
    copy_rows(pieces_of(dtype, rows, cols, from), bytes.data(), 0, pieces_of(dtype, rows, cols, to), out.data(), 0, rows);
  return Status::ok();
}

Expected<std::vector<std::byte>> relayout(WeightLayout from, WeightLayout to, DType dtype, int64_t rows, int64_t cols,
                                          std::span<const std::byte> bytes) {
  std::vector<std::byte> out(bytes.size());
  TS_TRY(relayout_into(from, to, dtype, rows, cols, bytes, out));
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
