// Portable f32/f16/bf16 tiles and vector helpers, written so that the
// compiler vectorizes them (independent partial sums, no reassociation).
#include "core/half.h"
#include "kernels/cpu/isa_kernels.h"

namespace tessera::kernels::cpu::detail {

namespace {
constexpr int kLanes = 8;

template <typename Load>
float dot_with(const float* x, int64_t k, Load load) {
  float part[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= k; j += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] += x[j + l] * load(j + l);
  float acc = 0.0f;
  for (; j < k; ++j) acc += x[j] * load(j);
  for (int l = 0; l < kLanes; ++l) acc += part[l];
  return acc;
}

template <typename Load>
void tile_with(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k, float* y,
               int64_t ldy, Load load) {
  for (int r = 0; r < nr; ++r) {
    const std::byte* wr = w + r * w_stride;
    for (int i = 0; i < mr; ++i) y[i * ldy + r] = dot_with(x + i * ldx, k, [&](int64_t j) { return load(wr, j); });
  }
}
}  // namespace

void f32_tile__portable(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                        float* y, int64_t ldy) {
  tile_with(x, ldx, mr, w, w_stride, nr, k, y, ldy,
            [](const std::byte* wr, int64_t j) { return reinterpret_cast<const float*>(wr)[j]; });
}

void f16_tile__portable(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                        float* y, int64_t ldy) {
  tile_with(x, ldx, mr, w, w_stride, nr, k, y, ldy,
            [](const std::byte* wr, int64_t j) { return f16_to_f32(reinterpret_cast<const uint16_t*>(wr)[j]); });
}

void bf16_tile__portable(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                         float* y, int64_t ldy) {
  tile_with(x, ldx, mr, w, w_stride, nr, k, y, ldy,
            [](const std::byte* wr, int64_t j) { return bf16_to_f32(reinterpret_cast<const uint16_t*>(wr)[j]); });
}

float dot__portable(const float* a, const float* b, int64_t n) {
  return dot_with(a, n, [b](int64_t j) { return b[j]; });
}

void axpy__portable(float a, const float* x, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] += a * x[j];
}

void f16_to_f32__portable(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = f16_to_f32(src[j]);
}

void bf16_to_f32__portable(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = bf16_to_f32(src[j]);
}

void f32_to_f16__portable(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = f32_to_f16(src[j]);
}

void f32_to_bf16__portable(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = f32_to_bf16(src[j]);
}

}  // namespace tessera::kernels::cpu::detail
