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

namespace {
uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
}  // namespace

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[b * kQK4_0 + j] = (float)(x[b].qs[j] & 0x0f) * d + m;
      y[b * kQK4_0 + j + kQK4_0 / 2] = (float)(x[b].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float d = f16_to_f32(x[b].d);
    const uint32_t qh = load_u32(x[b].qh);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int x0 = (int)((x[b].qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10)) - 16;
      const int x1 = (int)((x[b].qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
      y[b * kQK4_0 + j] = (float)x0 * d;
      y[b * kQK4_0 + j + kQK4_0 / 2] = (float)x1 * d;
    }
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    const uint32_t qh = load_u32(x[b].qh);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int x0 = (int)((x[b].qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10));
      const int x1 = (int)((x[b].qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
      y[b * kQK4_0 + j] = (float)x0 * d + m;
      y[b * kQK4_0 + j + kQK4_0 / 2] = (float)x1 * d + m;
    }
  }
}

void dequantize_row_iq4_nl(const BlockIq4_NL* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_NL; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQK4_NL / 2; ++j) {
      y[b * kQK4_NL + j] = d * (float)kIq4nlValues[x[b].qs[j] & 0x0f];
      y[b * kQK4_NL + j + kQK4_NL / 2] = d * (float)kIq4nlValues[x[b].qs[j] >> 4];
    }
  }
}

void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    const uint8_t* q = x[b].qs;
    int is = 0;
    for (int half = 0; half < kQK_K; half += 128) {  // each 32 bytes of qs hold 128 elements, 2 bits apiece
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 32; part += 16) {
          const uint8_t sc = x[b].scales[is++];
          const float dl = d * (float)(sc & 0x0f), ml = dmin * (float)(sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * (float)((q[part + l] >> shift) & 3) - ml;
        }
      }
      q += 32;
    }
  }
}

// q3_K's 16 6-bit scales, unpacked from their 12 bytes (ggml's kmask shuffle), minus 32.
void q3_K_scales(const uint8_t* packed, int8_t out[16]) {
  uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f, tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(out, aux, 16);
  for (int i = 0; i < 16; ++i) out[i] = (int8_t)(out[i] - 32);
}

void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d);
    int8_t scales[16];
    q3_K_scales(x[b].scales, scales);
    const uint8_t* q = x[b].qs;
    const uint8_t* hm = x[b].hmask;
    uint8_t m = 1;
    int is = 0;
    for (int half = 0; half < kQK_K; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 32; part += 16) {
          const float dl = d * (float)scales[is++];
          for (int l = 0; l < 16; ++l)
            *y++ = dl * (float)((int)((q[part + l] >> shift) & 3) - ((hm[part + l] & m) ? 0 : 4));
        }
        m = (uint8_t)(m << 1);
      }
      q += 32;
    }
  }
}

void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    const uint8_t* ql = x[b].qs;
    const uint8_t* qh = x[b].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2) {
      uint8_t sc, m;
      q4_K_scale_min(is + 0, x[b].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4_K_scale_min(is + 1, x[b].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (float)((ql[l] & 0x0f) + ((qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (float)((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      ql += 32;
      u1 = (uint8_t)(u1 << 2);
      u2 = (uint8_t)(u2 << 2);
    }
  }
}

void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d);
    const uint8_t* ql = x[b].ql;
    const uint8_t* qh = x[b].qh;
    const int8_t* sc = x[b].scales;
    for (int half = 0; half < kQK_K; half += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = (int)((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = (int)((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = (int)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = (int)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        // (d * scale) * q, in that order: gguf-py's and ggml's rounding.
        y[l + 0] = d * (float)sc[is + 0] * (float)q1;
        y[l + 32] = d * (float)sc[is + 2] * (float)q2;
        y[l + 64] = d * (float)sc[is + 4] * (float)q3;
        y[l + 96] = d * (float)sc[is + 6] * (float)q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void dequantize_row_iq4_xs(const BlockIq4_XS* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d);
    const uint8_t* qs = x[b].qs;
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const int ls = ((x[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((x[b].scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * (float)(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * (float)kIq4nlValues[qs[j] & 0x0f];
        y[j + 16] = dl * (float)kIq4nlValues[qs[j] >> 4];
      }
      y += 32;
      qs += 16;
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
    case DType::q4_1: dequantize_row_q4_1(static_cast<const BlockQ4_1*>(src), dst, n); return;
    case DType::q5_0: dequantize_row_q5_0(static_cast<const BlockQ5_0*>(src), dst, n); return;
    case DType::q5_1: dequantize_row_q5_1(static_cast<const BlockQ5_1*>(src), dst, n); return;
    case DType::iq4_nl: dequantize_row_iq4_nl(static_cast<const BlockIq4_NL*>(src), dst, n); return;
    case DType::q2_K: dequantize_row_q2_K(static_cast<const BlockQ2_K*>(src), dst, n); return;
    case DType::q3_K: dequantize_row_q3_K(static_cast<const BlockQ3_K*>(src), dst, n); return;
    case DType::q5_K: dequantize_row_q5_K(static_cast<const BlockQ5_K*>(src), dst, n); return;
    case DType::q6_K: dequantize_row_q6_K(static_cast<const BlockQ6_K*>(src), dst, n); return;
    case DType::iq4_xs: dequantize_row_iq4_xs(static_cast<const BlockIq4_XS*>(src), dst, n); return;
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
    case DType::q4_1: quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), n); return true;
    case DType::q5_0: quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), n); return true;
    case DType::q5_1: quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), n); return true;
    case DType::q4_K: quantize_row_q4_K(src, static_cast<BlockQ4_K*>(dst), n); return true;
    case DType::q5_K: quantize_row_q5_K(src, static_cast<BlockQ5_K*>(dst), n); return true;
    case DType::q6_K: quantize_row_q6_K(src, static_cast<BlockQ6_K*>(dst), n); return true;
    default: return false;  // q2_K, q3_K and the i-quants: read, not written
  }
  return false;
}

}  // namespace tessera
