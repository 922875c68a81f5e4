// Portable q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs x q8_K tiles in plain
// C++: each weight super-block is unpacked once to unsigned codes (iq4_xs:
// signed table values) and dotted in int32 with every x row of the tile;
// the offsets (q2_K/q4_K/q5_K's mins, q3_K's -4, q6_K's -32) come from the
// x block sums (q8_K_activations.h).
#include <type_traits>

#include "core/half.h"
#include "core/quant.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/q8_K_activations.h"
#include "kernels/cpu/quant_tile_driver.h"

namespace tessera::kernels::cpu::detail {

namespace {

// What the q8_K kernels share (quant_tile_driver.h): one weight row a step,
// each x row an array of q8_K blocks. A step's body takes the x-row count at
// run time (plain C++ gains nothing from one copy per count).
struct Q8KRows {
  static constexpr int kRows = 1, kMaxMR = 4;
  static constexpr bool kPrefetch = false;
  using XRow = const BlockQ8_K*;
  using Acc = float;
  XRow x_row(const std::byte* row, int64_t) const { return reinterpret_cast<const BlockQ8_K*>(row); }
  void store(const Acc& a, int, float* y) const { *y = a; }
};

// q4_K's 256 codes: chunk c of 64 elements is the low nibbles of
// qs[32c..32c+31], then the high ones.
void k4_codes(const BlockQ4_K& blk, uint8_t* q) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = blk.qs[32 * c + l] & 0x0f;
      q[64 * c + 32 + l] = blk.qs[32 * c + l] >> 4;
    }
}

// q5_K: as q4_K, plus bit 2c (low nibbles) or 2c+1 (high) of qh[l] as the fifth bit.
void k4_codes(const BlockQ5_K& blk, uint8_t* q) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = (uint8_t)((blk.qs[32 * c + l] & 0x0f) | (((blk.qh[l] >> (2 * c)) & 1) << 4));
      q[64 * c + 32 + l] = (uint8_t)((blk.qs[32 * c + l] >> 4) | (((blk.qh[l] >> (2 * c + 1)) & 1) << 4));
    }
}

// q4_K and q5_K: y += d * sum_s sc_s * dot(q_s, x_s) - dmin * sum_s m_s * sum(x_s)
// over the 8 sub-blocks of 32.
template <typename Block>
void k4_step(const Block& blk, int64_t b, const BlockQ8_K* const* xr, float* acc, int mr) {
  uint8_t q[kQK_K];
  uint32_t sm[4];
  k4_codes(blk, q);
  k4_scales_mins(blk.scales, sm);
  const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
  for (int i = 0; i < mr; ++i) {
    const BlockQ8_K& xb = xr[i][b];
    int32_t sumi = 0, summ = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int j = 0; j < 32; ++j) dot += (int32_t)q[32 * s + j] * xb.qs[32 * s + j];
      sumi += k4_byte(sm, s) * dot;
      summ += k4_byte(sm, 8 + s) * (xb.bsums[2 * s] + xb.bsums[2 * s + 1]);
    }
    acc[i] += d * xb.d * (float)sumi - dmin * xb.d * (float)summ;
  }
}

template <typename B>
struct K4 : Q8KRows {
  using Block = B;
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    k4_step(w[0][b], b, xr, acc, MR);
  }
};

// q2_K and q3_K: element 128h + 32j + l (l < 32) is bits 2j..2j+1 of
// qs[32h + l]; q3_K adds 4 where bit 4h + j of hmask[l] is set (value
// q - 4). Sub-blocks of 16.
template <typename Block>
void two_bit_codes(const Block& blk, uint8_t* q) {
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) {
        int v = (blk.qs[32 * h + l] >> (2 * j)) & 3;
        if constexpr (std::is_same_v<Block, BlockQ3_K>) v += ((blk.hmask[l] >> (4 * h + j)) & 1) << 2;
        q[128 * h + 32 * j + l] = (uint8_t)v;
      }
}

// q2_K: y += d * sum_s sc_s * dot(q_s, x_s) - dmin * sum_s m_s * sum(x_s);
// q3_K: y += d * sum_s sc_s * (dot(q_s, x_s) - 4 * sum(x_s)), sc signed.
template <typename Block>
void two_bit_step(const Block& blk, int64_t b, const BlockQ8_K* const* xr, float* acc, int mr) {
  constexpr bool kQ3 = std::is_same_v<Block, BlockQ3_K>;
  uint8_t q[kQK_K];
  two_bit_codes(blk, q);
  int sc[16], mins[16] = {};
  if constexpr (kQ3) {
    int8_t s8[16];
    q3_K_scales(blk.scales, s8);
    for (int s = 0; s < 16; ++s) sc[s] = s8[s];
  } else {
    for (int s = 0; s < 16; ++s) sc[s] = blk.scales[s] & 0x0f, mins[s] = blk.scales[s] >> 4;
  }
  const float d = f16_to_f32(blk.d);
  for (int i = 0; i < mr; ++i) {
    const BlockQ8_K& xb = xr[i][b];
    int32_t sumi = 0, summ = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t dot = 0;
      for (int j = 0; j < 16; ++j) dot += (int32_t)q[16 * s + j] * xb.qs[16 * s + j];
      if constexpr (kQ3) sumi += sc[s] * (dot - 4 * xb.bsums[s]);
      else sumi += sc[s] * dot, summ += mins[s] * xb.bsums[s];
    }
    if constexpr (kQ3) acc[i] += d * xb.d * (float)sumi;
    else acc[i] += d * xb.d * (float)sumi - f16_to_f32(blk.dmin) * xb.d * (float)summ;
  }
}

template <typename B>
struct TwoBit : Q8KRows {
  using Block = B;
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    two_bit_step(w[0][b], b, xr, acc, MR);
  }
};

// q6_K: y += d * (sum_s sc_s * dot(q_s, x_s) - 32 * sum_s sc_s * sum(x_s))
// over 16 sub-blocks of 16, q the unsigned 6-bit code.
void q6_K_step(const BlockQ6_K& blk, int64_t b, const BlockQ8_K* const* xr, float* acc, int mr) {
  uint8_t q[kQK_K];
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = blk.ql + 64 * h;
    const uint8_t* qh = blk.qh + 32 * h;
    uint8_t* o = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      o[l] = (uint8_t)((ql[l] & 0x0f) | ((qh[l] & 3) << 4));
      o[l + 32] = (uint8_t)((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4));
      o[l + 64] = (uint8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      o[l + 96] = (uint8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
  const float d = f16_to_f32(blk.d);
  for (int i = 0; i < mr; ++i) {
    const BlockQ8_K& xb = xr[i][b];
    int32_t sumi = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t dot = 0;
      for (int j = 0; j < 16; ++j) dot += (int32_t)q[16 * s + j] * xb.qs[16 * s + j];
      sumi += blk.scales[s] * (dot - 32 * xb.bsums[s]);
    }
    acc[i] += d * xb.d * (float)sumi;
  }
}

struct Q6K : Q8KRows {
  using Block = BlockQ6_K;
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    q6_K_step(w[0][b], b, xr, acc, MR);
  }
};

// iq4_xs: y += d * sum_s (ls_s - 32) * dot(v_s, x_s) over 8 sub-blocks of
// 32, v the table values of the nibbles (sub-block s: qs[16s..16s+15], low
// nibbles then high), ls_s nibble s of scales_l with bits 2s..2s+1 of scales_h on top.
void iq4_xs_step(const BlockIq4_XS& blk, int64_t b, const BlockQ8_K* const* xr, float* acc, int mr) {
  int8_t v[kQK_K];
  int sc[8];
  for (int s = 0; s < 8; ++s) {
    for (int j = 0; j < 16; ++j) {
      v[32 * s + j] = kIq4nlValues[blk.qs[16 * s + j] & 0x0f];
      v[32 * s + 16 + j] = kIq4nlValues[blk.qs[16 * s + j] >> 4];
    }
    sc[s] = (((blk.scales_l[s / 2] >> (4 * (s % 2))) & 0x0f) | (((blk.scales_h >> (2 * s)) & 3) << 4)) - 32;
  }
  const float d = f16_to_f32(blk.d);
  for (int i = 0; i < mr; ++i) {
    const BlockQ8_K& xb = xr[i][b];
    int32_t sumi = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int j = 0; j < 32; ++j) dot += (int32_t)v[32 * s + j] * xb.qs[32 * s + j];
      sumi += sc[s] * dot;
    }
    acc[i] += d * xb.d * (float)sumi;
  }
}

struct Iq4Xs : Q8KRows {
  using Block = BlockIq4_XS;
  template <int MR>
  void step(const BlockRow<Block> (&w)[1], int64_t b, const XRow (&xr)[MR], Acc (&acc)[MR]) const {
    iq4_xs_step(w[0][b], b, xr, acc, MR);
  }
};

}  // namespace

void q2_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(TwoBit<BlockQ2_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q3_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(TwoBit<BlockQ3_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q4_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(K4<BlockQ4_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q5_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(K4<BlockQ5_K>{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void q6_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  run_tile(Q6K{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

void iq4_xs_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                           float* y, int64_t ldy) {
  run_tile(Iq4Xs{}, x, x_stride, mr, w, nr, k / kQK_K, y, ldy);
}

}  // namespace tessera::kernels::cpu::detail
