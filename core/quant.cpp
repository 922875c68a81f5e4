#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"

namespace tessera {

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* xb = x + b * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK8_0; ++j) y[b].qs[j] = (int8_t)std::roundf(xb[j] * id);
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float* xb = x + b * kQK4_0;
    // ggml keeps the sign of the element with the largest magnitude so that
    // it maps exactly to -8.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(xb[j])) { amax = std::fabs(xb[j]); max = xb[j]; }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const uint8_t x0 = (uint8_t)std::min(15, (int)(xb[j] * id + 8.5f));
      const uint8_t x1 = (uint8_t)std::min(15, (int)(xb[j + kQK4_0 / 2] * id + 8.5f));
      y[b].qs[j] = (uint8_t)(x0 | (x1 << 4));
    }
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQK8_0; ++j) y[b * kQK8_0 + j] = x[b].qs[j] * d;
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[b * kQK4_0 + j] = ((x[b].qs[j] & 0x0f) - 8) * d;
      y[b * kQK4_0 + j + kQK4_0 / 2] = ((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

namespace {
// ggml's get_scale_min_k4: 6-bit scale and min of sub-block j.
void q4_K_scale_min(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
}  // namespace

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d);
    const float dmin = f16_to_f32(x[b].dmin);
    const uint8_t* q = x[b].qs;
    int is = 0;
    for (int j = 0; j < kQK_K; j += 64) {
      uint8_t sc, m;
      q4_K_scale_min(is + 0, x[b].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4_K_scale_min(is + 1, x[b].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::f32: std::memcpy(dst, src, (size_t)n * 4); return;
    case DType::f16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::bf16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::i8: {
      const auto* s = static_cast<const int8_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
      return;
    }
    case DType::i32: {
      const auto* s = static_cast<const int32_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = (float)s[i];
      return;
    }
    case DType::q8_0: dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n); return;
    case DType::q4_0: dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n); return;
    case DType::q4_K: dequantize_row_q4_K(static_cast<const BlockQ4_K*>(src), dst, n); return;
  }
}

bool quantize_row(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::f32: std::memcpy(dst, src, (size_t)n * 4); return true;
    case DType::f16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return true;
    }
    case DType::bf16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return true;
    }
    case DType::i8: {
      auto* d = static_cast<int8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = (int8_t)std::clamp(std::lround(src[i]), -128l, 127l);
      return true;
    }
    case DType::i32: {
      auto* d = static_cast<int32_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = (int32_t)std::lround(src[i]);
      return true;
    }
    case DType::q8_0: quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n); return true;
    case DType::q4_0: quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n); return true;
    case DType::q4_K: return false;
  }
  return false;
}

}  // namespace tessera
