// neon_dotprod f32/f16/bf16 tiles and vector helpers on NEON FMA. f16 and
// bf16 weights are widened on the fly (FCVTL; bf16 a shift), FMA in f32.
// (Plain NEON: these run on any aarch64 core, but belong to the family the
// probe picks, so that one family's kernels run together.)
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__neon.h"

namespace tessera::kernels::cpu::detail {

namespace {

struct F32Weights {
  static void load8(const std::byte* wr, int64_t j, float32x4_t& lo, float32x4_t& hi) {
    const float* p = reinterpret_cast<const float*>(wr) + j;
    lo = vld1q_f32(p);
    hi = vld1q_f32(p + 4);
  }
  static float load1(const std::byte* wr, int64_t j) { return reinterpret_cast<const float*>(wr)[j]; }
};
struct F16Weights {
  static void load8(const std::byte* wr, int64_t j, float32x4_t& lo, float32x4_t& hi) {
    halves_to_floats(reinterpret_cast<const uint16_t*>(wr) + j, lo, hi);
  }
  static float load1(const std::byte* wr, int64_t j) { return half_to_float(reinterpret_cast<const uint16_t*>(wr)[j]); }
};
struct Bf16Weights {
  static void load8(const std::byte* wr, int64_t j, float32x4_t& lo, float32x4_t& hi) {
    bf16s_to_floats(reinterpret_cast<const uint16_t*>(wr) + j, lo, hi);
  }
  static float load1(const std::byte* wr, int64_t j) {
    return vgetq_lane_f32(vreinterpretq_f32_u32(vshll_n_u16(vdup_n_u16(reinterpret_cast<const uint16_t*>(wr)[j]), 16)), 0);
  }
};

// y[i][r] = dot(x row i, w row r) for MR x rows and NR weight rows. Each
// output sums 8 lanes (two f32x4 FMA chains) over k's multiple of 8, adds
// them across, then its last k % 8 products in order: the same steps for
// any MR and NR, so a row's bits do not depend on m.
template <int MR, int NR, typename W>
void float_tile(const float* x, int64_t ldx, const std::byte* w, int64_t w_stride, int64_t k, float* y, int64_t ldy) {
  float32x4_t lo[MR][NR], hi[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) lo[i][r] = hi[i][r] = vdupq_n_f32(0.0f);
  const int64_t k8 = k / 8 * 8;
  for (int64_t j = 0; j < k8; j += 8) {
    float32x4_t wl[NR], wh[NR];
    for (int r = 0; r < NR; ++r) W::load8(w + r * w_stride, j, wl[r], wh[r]);
    for (int i = 0; i < MR; ++i) {
      const float32x4_t xl = vld1q_f32(x + i * ldx + j), xh = vld1q_f32(x + i * ldx + j + 4);
      for (int r = 0; r < NR; ++r) {
        lo[i][r] = vfmaq_f32(lo[i][r], xl, wl[r]);
        hi[i][r] = vfmaq_f32(hi[i][r], xh, wh[r]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) {
      float s = vaddvq_f32(vaddq_f32(lo[i][r], hi[i][r]));
      for (int64_t j = k8; j < k; ++j) s += x[i * ldx + j] * W::load1(w + r * w_stride, j);
      y[i * ldy + r] = s;
    }
}

// Two x rows at most: 16 accumulators, 8 weight and 4 x registers of 32.
template <int NR, typename W>
void float_rows(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int64_t k, float* y,
                int64_t ldy) {
  int i = 0;
  for (; i + 2 <= mr; i += 2) float_tile<2, NR, W>(x + i * ldx, ldx, w, w_stride, k, y + i * ldy, ldy);
  if (i < mr) float_tile<1, NR, W>(x + i * ldx, ldx, w, w_stride, k, y + i * ldy, ldy);
}

template <typename W>
void float_tiles(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k, float* y,
                 int64_t ldy) {
  if (nr == 4) return float_rows<4, W>(x, ldx, mr, w, w_stride, k, y, ldy);
  for (int r = 0; r < nr; ++r) float_rows<1, W>(x, ldx, mr, w + r * w_stride, w_stride, k, y + r, ldy);
}

}  // namespace

void f32_tile__neon_dotprod(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr,
                            int64_t k, float* y, int64_t ldy) {
  float_tiles<F32Weights>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

void f16_tile__neon_dotprod(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr,
                            int64_t k, float* y, int64_t ldy) {
  float_tiles<F16Weights>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

void bf16_tile__neon_dotprod(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr,
                             int64_t k, float* y, int64_t ldy) {
  float_tiles<Bf16Weights>(x, ldx, mr, w, w_stride, nr, k, y, ldy);
}

float dot__neon_dotprod(const float* a, const float* b, int64_t n) {
  float y = 0.0f;
  float_tile<1, 1, F32Weights>(a, n, reinterpret_cast<const std::byte*>(b), 0, n, &y, 1);
  return y;
}

void axpy__neon_dotprod(float a, const float* x, float* y, int64_t n) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) vst1q_f32(y + j, vfmaq_n_f32(vld1q_f32(y + j), vld1q_f32(x + j), a));
  for (; j < n; ++j) y[j] += a * x[j];
}

void f16_to_f32__neon_dotprod(const uint16_t* src, float* dst, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    float32x4_t lo, hi;
    halves_to_floats(src + j, lo, hi);
    vst1q_f32(dst + j, lo);
    vst1q_f32(dst + j + 4, hi);
  }
  for (; j < n; ++j) dst[j] = half_to_float(src[j]);
}

void bf16_to_f32__neon_dotprod(const uint16_t* src, float* dst, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    float32x4_t lo, hi;
    bf16s_to_floats(src + j, lo, hi);
    vst1q_f32(dst + j, lo);
    vst1q_f32(dst + j + 4, hi);
  }
  for (; j < n; ++j) dst[j] = Bf16Weights::load1(reinterpret_cast<const std::byte*>(src), j);
}

}  // namespace tessera::kernels::cpu::detail
