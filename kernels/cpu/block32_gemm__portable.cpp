// Portable q4_1, q5_0, q5_1 and iq4_nl x q8 tiles in plain C++, as ggml's
// vec_dot_{q4_1_q8_1, q5_0_q8_0, q5_1_q8_1, iq4_nl_q8_0}: each weight block
// is unpacked once to int8 values (iq4_nl's looked up in the dot) and
// dotted in int32 with every x row of the tile; q4_1's and q5_1's min enters as m * s, s = d_x * sum(q_x) (the
// qx row's s, isa_kernels.h).
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/quant_tile_driver.h"

namespace tessera::kernels::cpu::detail {

namespace {

struct QxRow {
  const int8_t* qs;
  const float* s;  // q4_1, q5_1: d * sum(q) a block
  const float* d;
};

// Eight bytes from the eight bits of b: 0x10 where the bit is set (SWAR:
// each byte of b * 0x01..01 masked to its own bit, then that bit's
// presence carried to bit 7 and shifted down to bit 4).
inline uint64_t fifth_bits8(uint32_t b) {
  const uint64_t spread = ((uint64_t)(b & 0xff) * 0x0101010101010101u) & 0x8040201008040201u;
  return ((spread + 0x7f7f7f7f7f7f7f7fu) & 0x8080808080808080u) >> 3;
}

// Block b's 32 values as the integer dot sees them: q5_0's signed (q - 16),
// q4_1's and q5_1's their unsigned codes (the min is added apart). Element j is in the low nibble of qs[j], element j + 16 in
// the high one; q5_0/q5_1's fifth bit of element j is bit j of qh. Eight
// elements at a time in a 64-bit word.
template <typename Block>
void block_values(const Block& blk, int8_t* v) {
  constexpr uint64_t kLow4 = 0x0f0f0f0f0f0f0f0fu;
  uint32_t qh = 0;
  if constexpr (std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>) std::memcpy(&qh, blk.qh, 4);
  for (int h = 0; h < 4; ++h) {  // elements 8h..8h+7: low nibbles (h < 2) or high ones of qs[8(h%2)..]
    uint64_t q;
    std::memcpy(&q, blk.qs + 8 * (h % 2), 8);
    uint64_t u = (h < 2 ? q : q >> 4) & kLow4;
    if constexpr (!std::is_same_v<Block, BlockQ4_1>) {
      const uint64_t fifth = fifth_bits8(qh >> (8 * h));
      // q5_0: q - 16 as int8 is the nibble where the fifth bit is set, nibble | 0xf0 where not.
      u |= std::is_same_v<Block, BlockQ5_0> ? (fifth ^ 0x1010101010101010u) * 0x0f : fifth;
    }
    std::memcpy(v + 8 * h, &u, 8);
  }
}

// q4_1/q5_1 x rows hold s = d * sum(q) per block (isa_kernels.h).
template <typename Block>
void block32_step(const Block& blk, int64_t b, const QxRow* xr, float* acc, int mr) {
  constexpr bool kMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;
  constexpr bool kTable = std::is_same_v<Block, BlockIq4_NL>;
  int8_t v[32];
  if constexpr (!kTable) block_values(blk, v);
  const float d = f16_to_f32(blk.d);
  for (int i = 0; i < mr; ++i) {
    const int8_t* q = xr[i].qs + b * 32;
    int32_t dot = 0;
    if constexpr (kTable)  // looked up in the dot: GCC packs a decoded array badly
      for (int j = 0; j < 16; ++j)
        dot += (int32_t)kIq4nlValues[blk.qs[j] & 0x0f] * q[j] + (int32_t)kIq4nlValues[blk.qs[j] >> 4] * q[j + 16];
    else
      for (int j = 0; j < 32; ++j) dot += (int32_t)v[j] * q[j];
    acc[i] += (float)dot * (d * xr[i].d[b]);
    if constexpr (kMin) acc[i] += f16_to_f32(blk.m) * xr[i].s[b];
  }
}

// quant_tile_driver.h's kernel: one weight row a step; the step's body takes
// the x-row count at run time (plain C++ gains nothing from one copy per count).
template <typename B>
struct Block32 {
  using Block = B;
  static constexpr int kRows = 1, kMaxMR = 4;
  static constexpr bool kPrefetch = false;
  using XRow = QxRow;
  using Acc = float;
  XRow x_row(const std::byte* row, int64_t nb) const { return {qx_qs(row), qx_s(row, nb), qx_d(row, nb)}; }
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    block32_step(w[0][b], b, xr, acc, MR);
  }
  void store(const Acc& a, int, float* y) const { *y = a; }
};

}  // namespace

void q4_1_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(Block32<BlockQ4_1>{}, x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void q5_0_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(Block32<BlockQ5_0>{}, x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void q5_1_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(Block32<BlockQ5_1>{}, x, x_stride, mr, w, nr, k / 32, y, ldy);
}

void iq4_nl_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(Block32<BlockIq4_NL>{}, x, x_stride, mr, w, nr, k / 32, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
