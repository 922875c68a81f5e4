// The CUDA/ROCm KV element code (kernels/cuda/kv_element.h) run on the host,
// against the reference's (kernels/kv_element.h): the bytes a device's
// kv_append writes into f16, bf16, q8_0 and fp8_e4m3 pools and the values its
// attention reads back. Both are __host__ __device__ with IEEE arithmetic,
// so the host computes what a GPU would; this runs where nvcc builds the
// CUDA backend, with or without a GPU (the HAL conformance cases check the
// same on a device where there is one).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cuda/kv_element.h"
#include "kernels/kv_element.h"
#include "support/random.h"

namespace tessera {
namespace {

using testing::Rng;

bool same_bits(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

// Rows of `blocks` 32-element blocks drawn from ranges that reach f16's
// subnormal scales, blocks of zeros and blocks with one NaN.
std::vector<float> block_rows(Rng& rng, int64_t blocks) {
  const float ranges[] = {30.0f, 1.0f, 1e-3f, 3e-6f, 1e-9f, 448.0f * 127.0f};
  std::vector<float> x((size_t)blocks * 32);
  for (int64_t b = 0; b < blocks; ++b) {
    const float r = ranges[rng.integer(0, 5)];
    for (int j = 0; j < 32; ++j) x[(size_t)(b * 32 + j)] = rng.uniform(-r, r);
    const int kind = rng.integer(0, 9);
    if (kind == 0) std::fill(x.begin() + b * 32, x.begin() + b * 32 + 32, 0.0f);
    if (kind == 1) x[(size_t)(b * 32 + rng.integer(0, 31))] = 0.0f;
    // Values that are exact multiples of a step: q8_0's rounding ties.
    if (kind == 2)
      for (int j = 0; j < 32; ++j) x[(size_t)(b * 32 + j)] = (float)rng.integer(-254, 254) * 0.5f;
  }
  return x;
}

TEST_CASE("the GPU kv_append's q8_0 and fp8_e4m3 blocks are the reference's bytes, and read back as the reference reads them") {
  Rng rng(401);
  for (DType t : {DType::q8_0, DType::fp8_e4m3}) {
    CAPTURE(name(t));
    const int64_t blocks = 4096;
    const std::vector<float> x = block_rows(rng, blocks);
    std::vector<uint8_t> got((size_t)blocks * 34), want(got.size());
    for (int64_t b = 0; b < blocks; ++b) gpu::kernels::store_kv_block(got.data(), t, b * 32, x.data() + b * 32);
    kernels::store_kv_row(want.data(), t, 0, x.data(), blocks * 32);
    int64_t bad_blocks = 0;
    for (int64_t b = 0; b < blocks; ++b) bad_blocks += std::memcmp(got.data() + b * 34, want.data() + b * 34, 34) != 0;
    CHECK_MESSAGE(bad_blocks == 0, bad_blocks << " of " << blocks << " blocks differ from the reference's bytes");
    int64_t bad_reads = 0;
    for (int64_t i = 0; i < blocks * 32; ++i)
      bad_reads += !same_bits(gpu::kernels::load_kv(want.data(), t, i), kernels::load_kv(want.data(), t, i));
    CHECK_MESSAGE(bad_reads == 0, bad_reads << " elements read back differently from the reference");
  }
}

TEST_CASE("the GPU's fp8_e4m3 decode and encode agree with the reference on every code and on f32 values around each") {
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    const float v = kernels::fp8_e4m3_to_f32((uint8_t)c);
    CHECK(same_bits(gpu::kernels::fp8_e4m3_bits_to_f32((uint8_t)c), v));
    if (std::isnan(v)) continue;
    for (float probe : {v, std::nextafter(v, 1e9f), std::nextafter(v, -1e9f), v * 1.0625f, v * 0.9375f})
      CHECK(gpu::kernels::f32_to_fp8_e4m3_bits(probe) == kernels::f32_to_fp8_e4m3(probe));
  }
  CHECK(gpu::kernels::f32_to_fp8_e4m3_bits(NAN) == kernels::f32_to_fp8_e4m3(NAN));
  CHECK(gpu::kernels::f32_to_fp8_e4m3_bits(1e30f) == kernels::f32_to_fp8_e4m3(1e30f));
  CHECK(gpu::kernels::f32_to_fp8_e4m3_bits(-1e30f) == kernels::f32_to_fp8_e4m3(-1e30f));
}

TEST_CASE("the GPU kv_append's f16 and bf16 elements are the reference's, NaN, infinities and subnormals included") {
  Rng rng(402);
  std::vector<float> x = rng.floats(20000, -70000.0f, 70000.0f);
  for (size_t i = 0; i < x.size(); i += 7) x[i] *= 1e-9f;
  for (size_t i = 3; i < x.size(); i += 11) x[i] *= 1e-30f;
  x[0] = NAN;
  x[1] = INFINITY;
  x[2] = -INFINITY;
  x[3] = -0.0f;
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(name(t));
    std::vector<uint16_t> got(x.size()), want(x.size());
    int64_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      gpu::kernels::store_kv(got.data(), t, (int64_t)i, x[i]);
      kernels::store_kv(want.data(), t, (int64_t)i, x[i]);
      const bool nan = std::isnan(x[i]);
      bad += nan ? !std::isnan(gpu::kernels::load_kv(got.data(), t, (int64_t)i)) : got[i] != want[i];
      bad += !same_bits(gpu::kernels::load_kv(want.data(), t, (int64_t)i), kernels::load_kv(want.data(), t, (int64_t)i));
    }
    CHECK_MESSAGE(bad == 0, bad << " of " << x.size() << " elements differ");
  }
}

}  // namespace
}  // namespace tessera
