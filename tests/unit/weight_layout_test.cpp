// repack_rows_x4 and repack_rows_x16 (core/weight_layout.h): piece positions
// on small known cases, round trips on random bytes, and the refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include <random>

#include "core/weight_layout.h"
#include "support/random.h"

using namespace tessera;

namespace {

// Every byte of q8_0 block b of row r set to a value naming (r, b).
std::vector<std::byte> tagged_q8_0(int64_t rows, int64_t nb) {
  const int64_t bb = sizeof(BlockQ8_0);
  std::vector<std::byte> w((size_t)(rows * nb * bb));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t j = 0; j < bb; ++j) w[(size_t)((r * nb + b) * bb + j)] = (std::byte)(r * 16 + b);
  return w;
}

}  // namespace

TEST_CASE("rows_x4 puts the 4 rows' block b together, and a last group of n % 4 rows interleaves over its own width") {
  const int64_t rows = 6, nb = 3, bb = sizeof(BlockQ8_0);
  const auto x4 = repack_rows_x4(DType::q8_0, rows, nb * 32, tagged_q8_0(rows, nb));
  REQUIRE_MESSAGE(x4.has_value(), x4.status().message());
  // Group 0 (rows 0-3): blocks in the order (r0 b0, r1 b0, r2 b0, r3 b0, r0 b1, ...).
  // Group 1 (rows 4-5, width 2): (r4 b0, r5 b0, r4 b1, r5 b1, r4 b2, r5 b2).
  std::vector<int> want;
  for (int b = 0; b < nb; ++b)
    for (int r = 0; r < 4; ++r) want.push_back(r * 16 + b);
  for (int b = 0; b < nb; ++b)
    for (int r = 4; r < 6; ++r) want.push_back(r * 16 + b);
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    for (int64_t j = 0; j < bb; ++j) CHECK((int)(*x4)[i * (size_t)bb + (size_t)j] == want[i]);
  }
}

TEST_CASE("unpack_rows_x4 undoes repack_rows_x4 on random bytes, q8_0 and q4_0, n from 1 to 9") {
  testing::Rng rng(401);
  for (DType t : {DType::q8_0, DType::q4_0})
    for (int64_t n = 1; n <= 9; ++n) {
      const int64_t k = 32 * rng.integer(1, 5);
      std::vector<std::byte> w(bytes_for(t, n * k));
      for (auto& b : w) b = (std::byte)rng.integer(0, 255);
      const auto x4 = repack_rows_x4(t, n, k, w);
      REQUIRE(x4.has_value());
      CHECK(x4->size() == w.size());
      if (n >= 2 && k > 32) CHECK(*x4 != w);  // two rows of two blocks or more: some block moved
      CHECK(unpack_rows_x4(t, n, k, *x4).value() == w);
    }
}

TEST_CASE("repack_rows_x4 refuses other dtypes, partial blocks and a wrong byte count with one line") {
  std::vector<std::byte> w(bytes_for(DType::f32, 4 * 32));
  CHECK(repack_rows_x4(DType::f32, 4, 32, w).status().message() ==
        "repack to rows_x4: layout=rows_x4 holds q8_0 or q4_0 weights, got f32");
  CHECK(repack_rows_x4(DType::q8_0, 4, 40, w).status().message() ==
        "repack to rows_x4: layout=rows_x4 holds a 2-D weight of whole blocks per row, got shape [4, 40]");
  CHECK(repack_rows_x4(DType::q8_0, 4, 32, w).status().message() ==
        "repack to rows_x4: 512 bytes; a q8_0[4, 32] weight has 136");
}

TEST_CASE("rows_x16 puts 16 rows' scales, then each code dword of the 16 rows, per block, and a last group of n % 16 over its width") {
  // Row r's block b: scale bytes (r, b, 0xff), code dword j every byte (r, b, j), as one byte r * 16 + b ^ j * 64.
  const int64_t rows = 19, nb = 2, bb = sizeof(BlockQ8_0);
  auto tag = [](int64_t r, int64_t b, int64_t piece) { return (int)((r * 4 + b + piece * 97) & 0xff); };
  std::vector<std::byte> w((size_t)(rows * nb * bb));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      std::byte* blk = w.data() + (r * nb + b) * bb;
      blk[0] = blk[1] = (std::byte)tag(r, b, 0);
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t i = 0; i < 4; ++i) blk[2 + 4 * j + i] = (std::byte)tag(r, b, 1 + j);
    }
  const auto x16 = repack_rows_x16(DType::q8_0, rows, nb * 32, w);
  REQUIRE_MESSAGE(x16.has_value(), x16.status().message());
  // Expected bytes, written out from the layout's description.
  std::vector<int> want;
  for (int64_t g0 : {0, 16}) {
    const int64_t width = std::min<int64_t>(16, rows - g0);
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t r = g0; r < g0 + width; ++r) want.insert(want.end(), 2, tag(r, b, 0));
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t r = g0; r < g0 + width; ++r) want.insert(want.end(), 4, tag(r, b, 1 + j));
    }
  }
  REQUIRE(want.size() == x16->size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK((int)(*x16)[i] == want[i]);
  }
}

TEST_CASE("unpack_rows_x16 undoes repack_rows_x16 on random bytes, q8_0 and q4_0, n from 1 to 40, and relayout goes x4 to x16") {
  testing::Rng rng(402);
  for (DType t : {DType::q8_0, DType::q4_0})
    for (int64_t n = 1; n <= 40; ++n) {
      const int64_t k = 32 * rng.integer(1, 5);
      std::vector<std::byte> w(bytes_for(t, n * k));
      for (auto& b : w) b = (std::byte)rng.integer(0, 255);
      const auto x16 = repack_rows_x16(t, n, k, w);
      REQUIRE(x16.has_value());
      CHECK(x16->size() == w.size());
      if (n >= 2) CHECK(*x16 != w);  // two rows: some piece moved
      CHECK(unpack_rows_x16(t, n, k, *x16).value() == w);
      const auto x4 = repack_rows_x4(t, n, k, w).value();
      CHECK(relayout(WeightLayout::rows_x4, WeightLayout::rows_x16, t, n, k, x4).value() == *x16);
    }
}

TEST_CASE("rows_x16 of f32, f16 and bf16 puts dword j of 16 rows together, a last group of n % 16 over its width, and refuses half dwords") {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(name(t));
    const int64_t n = 18, k = 6, row_bytes = (int64_t)bytes_for(t, k), dwords = row_bytes / 4;
    std::vector<std::byte> w((size_t)(n * row_bytes));
    for (size_t i = 0; i < w.size(); ++i) w[i] = (std::byte)(i * 7 + 3);
    const std::vector<std::byte> x16 = repack_rows_x16(t, n, k, w).value();
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < dwords; ++j) {
        const int64_t g0 = r / 16 * 16, width = std::min<int64_t>(16, n - g0);
        const int64_t at = g0 * row_bytes + 4 * (j * width + (r - g0));
        CHECK(std::memcmp(x16.data() + at, w.data() + r * row_bytes + 4 * j, 4) == 0);
      }
    CHECK(unpack_rows_x16(t, n, k, x16).value() == w);
  }
  std::vector<std::byte> odd(bytes_for(DType::f16, 4 * 7));
  CHECK(repack_rows_x16(DType::f16, 4, 7, odd).status().message() ==
        "repack to rows_x16: layout=rows_x16 holds f16 rows of whole 4-byte words (an even row width), got shape [4, 7]");
}

TEST_CASE("repack_rows_x16 refuses other dtypes and a wrong byte count with one line") {
  std::vector<std::byte> w(bytes_for(DType::f32, 4 * 32));
  CHECK(repack_rows_x16(DType::q4_K, 4, 256, w).status().message() ==
        "repack to rows_x16: layout=rows_x16 holds q8_0, q4_0, f32, f16 or bf16 weights, got q4_K");
  CHECK(repack_rows_x16(DType::q4_0, 4, 32, w).status().message() ==
        "repack to rows_x16: 512 bytes; a q4_0[4, 32] weight has 72");
}
