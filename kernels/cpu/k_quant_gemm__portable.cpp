// Portable q2_K, q3_K, q4_K, q5_K and q6_K x q8_K tiles in plain C++: each
// weight super-block is unpacked once to unsigned codes and dotted in int32
// with every x row of the tile; the offsets (q2_K/q4_K/q5_K's mins, q3_K's
// -4, q6_K's -32) come from the x block sums (q8_K_activations.h).
#include <type_traits>

#include "core/half.h"
#include "core/quant.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/q8_K_activations.h"

namespace tessera::kernels::cpu::detail {

namespace {

const BlockQ8_K* x_blocks(const std::byte* x, int64_t x_stride, int i) {
  return reinterpret_cast<const BlockQ8_K*>(x + i * x_stride);
}

// q4_K and q5_K: y += d * sum_s sc_s * dot(q_s, x_s) - dmin * sum_s m_s * sum(x_s)
// over the 8 sub-blocks of 32; `codes` fills the 256 unsigned codes.
template <typename Block, typename Codes>
void k4_tile(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
             int64_t ldy, const Codes& codes) {
  const int64_t nb = k / kQK_K;
  for (int r = 0; r < nr; ++r) {
    const BlockRow<Block> wb{w.base + r * w.row_stride, w.block_stride};
    float acc[4] = {};
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t q[kQK_K];
      uint32_t sm[4];
      codes(wb[b], q);
      k4_scales_mins(wb[b].scales, sm);
      const float d = f16_to_f32(wb[b].d), dmin = f16_to_f32(wb[b].dmin);
      for (int i = 0; i < mr; ++i) {
        const BlockQ8_K& xb = x_blocks(x, x_stride, i)[b];
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
    for (int i = 0; i < mr; ++i) y[i * ldy + r] = acc[i];
  }
}

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
void two_bit_tile(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                  int64_t ldy) {
  constexpr bool kQ3 = std::is_same_v<Block, BlockQ3_K>;
  const int64_t nb = k / kQK_K;
  for (int r = 0; r < nr; ++r) {
    const BlockRow<Block> wb{w.base + r * w.row_stride, w.block_stride};
    float acc[4] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const Block& blk = wb[b];
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
        const BlockQ8_K& xb = x_blocks(x, x_stride, i)[b];
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
    for (int i = 0; i < mr; ++i) y[i * ldy + r] = acc[i];
  }
}

}  // namespace

void q2_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  two_bit_tile<BlockQ2_K>(x, x_stride, mr, w, nr, k, y, ldy);
}

void q3_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  two_bit_tile<BlockQ3_K>(x, x_stride, mr, w, nr, k, y, ldy);
}

void q4_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  // Chunk c of 64 elements: the low nibbles of qs[32c..32c+31], then the high ones.
  k4_tile<BlockQ4_K>(x, x_stride, mr, w, nr, k, y, ldy, [](const BlockQ4_K& blk, uint8_t* q) {
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = blk.qs[32 * c + l] & 0x0f;
        q[64 * c + 32 + l] = blk.qs[32 * c + l] >> 4;
      }
  });
}

void q5_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  // As q4_K, plus bit 2c (low nibbles) or 2c+1 (high) of qh[l] as the fifth bit.
  k4_tile<BlockQ5_K>(x, x_stride, mr, w, nr, k, y, ldy, [](const BlockQ5_K& blk, uint8_t* q) {
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = (uint8_t)((blk.qs[32 * c + l] & 0x0f) | (((blk.qh[l] >> (2 * c)) & 1) << 4));
        q[64 * c + 32 + l] = (uint8_t)((blk.qs[32 * c + l] >> 4) | (((blk.qh[l] >> (2 * c + 1)) & 1) << 4));
      }
  });
}

// q6_K: y += d * (sum_s sc_s * dot(q_s, x_s) - 32 * sum_s sc_s * sum(x_s))
// over 16 sub-blocks of 16, q the unsigned 6-bit code.
void q6_K_tile__portable(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k,
                         float* y, int64_t ldy) {
  const int64_t nb = k / kQK_K;
  for (int r = 0; r < nr; ++r) {
    const BlockRow<BlockQ6_K> wb{w.base + r * w.row_stride, w.block_stride};
    float acc[4] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ6_K& blk = wb[b];
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
        const BlockQ8_K& xb = x_blocks(x, x_stride, i)[b];
        int32_t sumi = 0;
        for (int s = 0; s < 16; ++s) {
          int32_t dot = 0;
          for (int j = 0; j < 16; ++j) dot += (int32_t)q[16 * s + j] * xb.qs[16 * s + j];
          sumi += blk.scales[s] * (dot - 32 * xb.bsums[s]);
        }
        acc[i] += d * xb.d * (float)sumi;
      }
    }
    for (int i = 0; i < mr; ++i) y[i * ldy + r] = acc[i];
  }
}

}  // namespace tessera::kernels::cpu::detail
