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
  // Rows in groups of 16 with each block split: for each block column b,
  // the group's 16 f16 scales, then the code bytes dword by dword, dword j
  // of all 16 rows together (row r's qs[4j..4j+3] at 4 * (16j + r)). A
  // 512-bit load of dword j is then one vector whose lane r is row r, which
  // is what the AVX-512 VNNI kernels dot (docs/backends.md, "q8_0 and q4_0
  // on int8 panels"). A last group of n % 16 rows is split the same way
  // over its own width w (no padding): group g starts at row 16g's standard
  // offset, block b's piece at b * w blocks past it, scales first (2w
  // bytes), then w dwords per code dword (q8_0 has 8, q4_0 4).
  // f32, f16 and bf16 rows (of whole dwords: an even width for the 16-bit
  // types) are split the same way with no scale: dword j of the group's
  // rows together (row r's bytes 4j..4j+3 at 16 * 4j + 4r; one f32
  // element, or a pair of f16/bf16 elements), for the float panels
  // (kernels/cpu/float_panel_gemm__avx512vnni.cpp).
  rows_x16,
};
inline constexpr int kRowsX4Group = 4;
inline constexpr int kRowsX16Group = 16;

std::string_view name(WeightLayout l);
std::optional<WeightLayout> weight_layout_from_name(std::string_view name);

// Whether `layout` can hold a weight of this dtype and shape; the message
// names `what` (the weight) and what was expected.
Status check_weight_layout(WeightLayout layout, DType dtype, const Shape& shape, std::string_view what);

// The bytes of a [rows, cols] weight of `dtype` in the standard layout,
// reordered into rows_x4 (or back, unpack_rows_x4). `bytes` must be exactly
// the weight's size.
Expected<std::vector<std::byte>> repack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes);
Expected<std::vector<std::byte>> unpack_rows_x4(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes);
// The same for rows_x16.
Expected<std::vector<std::byte>> repack_rows_x16(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes);
Expected<std::vector<std::byte>> unpack_rows_x16(DType dtype, int64_t rows, int64_t cols, std::span<const std::byte> bytes);
// Rows [r0, r0 + nr) of a [rows, cols] weight held in `layout`, written to
// dst in the standard layout (nr rows). For kernels that read a layout
// they have no tiles for (slowly, but with the same blocks).
void read_rows(WeightLayout layout, DType dtype, int64_t rows, int64_t cols, const std::byte* bytes, int64_t r0,
               int64_t nr, std::byte* dst);
// Elements in one block of a layout: a GGUF block (q8_0, q4_0), or for
// f32, f16 and bf16 the dword rows_x16 interleaves (1 or 2 elements).
int64_t layout_block_elems(DType dtype);
// Blocks [b0, b0 + nb) of row r of a [rows, cols] weight held in `layout`,
// written to dst as the standard layout holds them. For a reader that takes
// a row a piece at a time into a small buffer of its own (the embedding of
// a tied classifier, which may not allocate during a step).
void read_row_blocks(WeightLayout layout, DType dtype, int64_t rows, int64_t cols, const std::byte* bytes, int64_t r,
                     int64_t b0, int64_t nb, std::byte* dst);
// Any layout to another (rows included), into `out` (exactly the weight's
// size, as `bytes` must be), for the loader's own buffers.
Status relayout_into(WeightLayout from, WeightLayout to, DType dtype, int64_t rows, int64_t cols,
                     std::span<const std::byte> bytes, std::span<std::byte> out);
// The same into a new vector, for tools and tests.
Expected<std::vector<std::byte>> relayout(WeightLayout from, WeightLayout to, DType dtype, int64_t rows, int64_t cols,
                                          std::span<const std::byte> bytes);

}  // namespace tessera
