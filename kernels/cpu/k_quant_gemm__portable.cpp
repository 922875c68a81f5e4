// Portable q4_K, q5_K and q6_K x q8_K tiles in plain C++: each weight
// super-block is unpacked once to unsigned codes and dotted in int32 with
// every x row of the tile; the offsets (q4_K/q5_K's mins, q6_K's -32) come
// from the x block sums (q8_K_activations.h).
#include "core/half.h"
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

}  // namespace

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
