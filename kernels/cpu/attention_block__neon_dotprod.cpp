// The paged attention inner kernel (attention_block.h) on NEON: 4 lanes, four
// vectors (16 columns) of every head of a set in registers per pass, f16
// widened by fcvtl, bf16 by a shift; tails go through a zeroed copy. A q8_0
// block's 4 bytes widen by sxtl and a scale, fp8's move into f16 bit
// patterns (bias 7 -> 15: 2^8 in the scale).
#include <cstring>

#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/exp_f32__neon.h"

namespace tessera::kernels::cpu::detail {

namespace {

struct VNeon {
  static constexpr int L = 4, kDRegs = 4, kScorePositions = 4;
  using R = float32x4_t;
  static R zero() { return vdupq_n_f32(0.0f); }
  static R set1(float x) { return vdupq_n_f32(x); }
  static R load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, R v) { vst1q_f32(p, v); }
  static R load_n(const float* p, int n) {
    float t[4] = {};
    std::memcpy(t, p, (size_t)n * sizeof(float));
    return vld1q_f32(t);
  }
  static void store_n(float* p, R v, int n) {
    float t[4];
    vst1q_f32(t, v);
    std::memcpy(p, t, (size_t)n * sizeof(float));
  }
  static R widen(uint16x4_t h, Kv t) {
    return t == Kv::f16 ? vcvt_f32_f16(vreinterpret_f16_u16(h)) : vreinterpretq_f32_u32(vshll_n_u16(h, 16));
  }
  // 4 elements of the 32-element block holding element i (i a multiple of 4).
  template <Kv T>
  static R load_block(const void* row, int64_t i) {
    const uint8_t* blk = static_cast<const uint8_t*>(row) + (i >> 5) * 34;
    uint32_t w;
    uint16_t dh;
    std::memcpy(&w, blk + 2 + (i & 31), 4);
    std::memcpy(&dh, blk, 2);
    const float d = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(dh))), 0);
    const uint8x8_t b = vreinterpret_u8_u32(vdup_n_u32(w));
    if constexpr (T == Kv::q8_0)
      return vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u8(b))))), d);
    const uint16x4_t x = vget_low_u16(vmovl_u8(b));
    uint16x4_t h = vorr_u16(vshl_n_u16(vand_u16(x, vdup_n_u16(0x7F)), 7), vshl_n_u16(vand_u16(x, vdup_n_u16(0x80)), 8));
    // 0x7F / 0xFF (e4m3's NaN) land on exponent 15, mantissa 7: made an f16 NaN, as the reference reads them.
    const uint16x4_t nan = vceq_u16(vand_u16(h, vdup_n_u16(0x7FFF)), vdup_n_u16(0x3F80));
    h = vorr_u16(h, vand_u16(nan, vdup_n_u16(0x7E00)));
    return vmulq_n_f32(vcvt_f32_f16(vreinterpret_f16_u16(h)), d * 256.0f);
  }
  template <Kv T>
  static R load_kv(const void* row, int64_t i) {
    if constexpr (T == Kv::f32) return vld1q_f32(static_cast<const float*>(row) + i);
    else if constexpr (is_block(T)) return load_block<T>(row, i);
    else return widen(vld1_u16(static_cast<const uint16_t*>(row) + i), T);
  }
  template <Kv T>
  static R load_kv_n(const void* row, int64_t i, int n) {
    if constexpr (T == Kv::f32) {
      return load_n(static_cast<const float*>(row) + i, n);
    } else {
      uint16_t t[4] = {};
      std::memcpy(t, static_cast<const uint16_t*>(row) + i, (size_t)n * sizeof(uint16_t));
      return widen(vld1_u16(t), T);
    }
  }
  static R fma(R a, R b, R c) { return vfmaq_f32(c, a, b); }
  static R mul(R a, R b) { return vmulq_f32(a, b); }
  static R div(R a, R b) { return vdivq_f32(a, b); }
  static R add(R a, R b) { return vaddq_f32(a, b); }
  static R sub(R a, R b) { return vsubq_f32(a, b); }
  static R max(R a, R b) { return vmaxq_f32(a, b); }
  static float hmax(R a) { return vmaxvq_f32(a); }
  static float hsum(R a) { return vaddvq_f32(a); }
  static R exp(R a) { return exp_f32x4(a); }
  // Lane o = the sum of row o (4 rows of 4): two rounds of pairwise adds.
  static R sum_rows(const float* rows) {
    return vpaddq_f32(vpaddq_f32(load(rows), load(rows + 4)), vpaddq_f32(load(rows + 8), load(rows + 12)));
  }
};

}  // namespace

void attention_block__neon_dotprod(const AttentionBlock& b) { attention_block<VNeon>(b); }
void attention_exp__neon_dotprod(const float* x, float* y, int64_t n) { exp_array<VNeon>(x, y, n); }

}  // namespace tessera::kernels::cpu::detail
