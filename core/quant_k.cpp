// Quantizers of the 32-element min/5-bit types and the K-quants q4_K, q5_K,
// q6_K, following llama.cpp's reference quantizers (what `llama-quantize`
// runs without an importance matrix) step for step, float operation for
// float operation: a file we quantize then holds the very blocks llama.cpp's
// would (tests/formats/zoo_quantize_test.cpp checks this on the zoo).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "core/quant.h"

namespace tessera {

namespace {

// Round to nearest, ties to even, by the float trick ggml uses (|v| < 2^22).
int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &shifted, 4);
  return (i & 0x007fffff) - 0x00400000;
}

constexpr float kGroupMaxEps = 1e-15f;

// min/max linear quantization of 32 values: y = d * q + m.
template <int kBits, typename Block>
void quantize_min_row(const float* x, Block* y, int64_t n) {
  constexpr int kLevels = (1 << kBits) - 1;
  for (int64_t b = 0; b < n / kQK4_0; ++b, x += kQK4_0) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQK4_0; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / (float)kLevels;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const float x0 = (x[j] - min) * id, x1 = (x[j + kQK4_0 / 2] - min) * id;
      // ggml truncates through int8 (values here are 0 .. kLevels + 0.5).
      uint8_t q0 = (uint8_t)(int8_t)(x0 + 0.5f), q1 = (uint8_t)(int8_t)(x1 + 0.5f);
      if constexpr (kBits == 4) {
        q0 = std::min<uint8_t>(15, q0);
        q1 = std::min<uint8_t>(15, q1);
      }
      y[b].qs[j] = (uint8_t)((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= (uint32_t)((q0 >> 4) & 1) << j;
      qh |= (uint32_t)((q1 >> 4) & 1) << (j + kQK4_0 / 2);
    }
    if constexpr (kBits == 5) std::memcpy(y[b].qh, &qh, 4);
  }
}

// ggml's make_qkx2_quants: codes 0..nmax and a (scale, min) for n values
// minimizing the weighted squared error, searching nstep scales around the
// plain min/max fit. Returns the scale; *neg_min = -min (>= 0).
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min, float rmin, float rdelta,
                    int nstep) {
  uint8_t Laux[32];
  float min = x[0], max = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.0f;
  }
  float iscale = (float)nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = (uint8_t)std::max(0, std::min(nmax, l));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += w[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = (uint8_t)l;
      sum_l += w[i] * (float)l;
      sum_l2 += w[i] * (float)l * (float)l;
      sum_xl += w[i] * (float)l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, (size_t)n);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// ggml's make_qx_quants with rmse_type 1 and no importance: signed codes
// -nmax .. nmax-1 (stored + nmax) and the scale of least x²-weighted error.
float fit_signed_scale(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = -(float)nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = (int8_t)(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * (float)l;
    suml2 += w * (float)l * (float)l;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -((float)nmax + 0.1f * (float)is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * (float)l;
      suml2 += w * (float)l * (float)l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = (int8_t)(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// q4_K and q5_K share their scale search and 6-bit scale/min packing;
// kNmax is 15 or 31 and the search window differs (ggml's constants).
template <int kNmax, typename Block>
void quantize_k_min_block(const float* x, Block* y, uint8_t L[kQK_K]) {
  constexpr float kRmin = kNmax == 15 ? -1.0f : -0.5f;
  constexpr int kSteps = kNmax == 15 ? 20 : 15;
  float mins[8], scales[8], weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = fit_scale_min(32, kNmax, x + 32 * j, weights, L + 32 * j, &mins[j], kRmin, 0.1f, kSteps);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(y->scales, 0, sizeof y->scales);
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls = (uint8_t)std::min(63, (int)(uint8_t)nearest_int(inv_scale * scales[j]));
    const uint8_t lm = (uint8_t)std::min(63, (int)(uint8_t)nearest_int(inv_min * mins[j]));
    if (j < 4) {
      y->scales[j] = ls;
      y->scales[j + 4] = lm;
    } else {
      y->scales[j + 4] = (uint8_t)((ls & 0x0f) | ((lm & 0x0f) << 4));
      y->scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
      y->scales[j] |= (uint8_t)((lm >> 4) << 6);
    }
  }
  y->d = f32_to_f16(max_scale / 63.0f);
  y->dmin = f32_to_f16(max_min / 63.0f);
  int8_t sc6[8], mn6[8];
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    q4_K_scale_min(j, y->scales, &sc, &m);
    sc6[j] = (int8_t)sc;
    mn6[j] = (int8_t)m;
  }
  for (int j = 0; j < 8; ++j) {
    const float d = f16_to_f32(y->d) * (float)sc6[j];
    if (d == 0.0f) continue;
    const float dm = f16_to_f32(y->dmin) * (float)mn6[j];
    for (int i = 0; i < 32; ++i) {
      const int l = nearest_int((x[32 * j + i] + dm) / d);
      L[32 * j + i] = (uint8_t)std::max(0, std::min(kNmax, l));
    }
  }
}

}  // namespace

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) { quantize_min_row<4>(x, y, n); }
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n) { quantize_min_row<5>(x, y, n); }

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b, x += kQK4_0) {
    float amax = 0.0f, max = 0.0f;  // the largest magnitude keeps its sign and maps to -16
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const uint8_t q0 = (uint8_t)std::min(31, (int)(int8_t)(x[j] * id + 16.5f));
      const uint8_t q1 = (uint8_t)std::min(31, (int)(int8_t)(x[j + kQK4_0 / 2] * id + 16.5f));
      y[b].qs[j] = (uint8_t)((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= (uint32_t)((q0 & 0x10u) >> 4) << j;
      qh |= (uint32_t)((q1 & 0x10u) >> 4) << (j + kQK4_0 / 2);
    }
    std::memcpy(y[b].qh, &qh, 4);
  }
}

void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n) {
  uint8_t L[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    quantize_k_min_block<15>(x, &y[b], L);
    uint8_t* q = y[b].qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n) {
  uint8_t L[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    quantize_k_min_block<31>(x, &y[b], L);
    uint8_t* qh = y[b].qh;
    uint8_t* ql = y[b].qs;
    std::memset(qh, 0, kQK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int base = 0; base < kQK_K; base += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[base + j], l2 = L[base + j + 32];
        if (l1 > 15) { l1 -= 16; qh[j] |= m1; }
        if (l2 > 15) { l2 -= 16; qh[j] |= m2; }
        ql[j] = (uint8_t)(l1 | (l2 << 4));
      }
      m1 = (uint8_t)(m1 << 2);
      m2 = (uint8_t)(m2 << 2);
    }
  }
}

void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      const float scale = fit_signed_scale(16, 32, x + 16 * ib, L + 16 * ib);
      scales[ib] = scale;
      if (std::fabs(scale) > max_abs_scale) {
        max_abs_scale = std::fabs(scale);
        max_scale = scale;
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof(BlockQ6_K));
      continue;
    }
    const float iscale = -128.0f / max_scale;
    y[b].d = f32_to_f16(1 / iscale);
    for (int ib = 0; ib < kQK_K / 16; ++ib) y[b].scales[ib] = (int8_t)std::min(127, nearest_int(iscale * scales[ib]));
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = f16_to_f32(y[b].d) * (float)y[b].scales[j];
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) {
        const int l = nearest_int(x[16 * j + i] / d);
        L[16 * j + i] = (int8_t)(std::max(-32, std::min(31, l)) + 32);
      }
    }
    uint8_t* ql = y[b].ql;
    uint8_t* qh = y[b].qh;
    for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t q1 = L[j + l] & 0x0f, q2 = L[j + l + 32] & 0x0f, q3 = L[j + l + 64] & 0x0f, q4 = L[j + l + 96] & 0x0f;
        ql[l] = (uint8_t)(q1 | (q3 << 4));
        ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
        qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace tessera
