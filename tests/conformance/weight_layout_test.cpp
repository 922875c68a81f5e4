// The quantized matmuls on the rows_x4 and rows_x16 weight layouts
// (core/weight_layout.h) against the reference on the standard layout, on
// every runnable ISA (families without panel kernels gather rows_x16 back),
// at m = 1, 3, 17, 64 and n not a multiple of 4 or 16 (the last group
// narrower), k to two of the panel kernels' k-slices.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.h"
#include "core/weight_layout.h"

namespace tessera::testing {
namespace {

using Case = MatmulShape;

const std::vector<Case> kCases = {{1, 1, 32},   {1, 6, 64},    {1, 33, 96},   {1, 260, 1024}, {3, 5, 64},   {3, 17, 160},
                                  {17, 2, 32},  {17, 45, 256}, {17, 64, 96},  {64, 3, 64},    {64, 70, 128}, {64, 129, 512},
                                  {2, 16, 4160}, {7, 47, 4160}, {61, 33, 4160}};

std::vector<float> reference(DType t, const std::vector<float>& x, const std::vector<std::byte>& w, const Case& c) {
  std::vector<float> y((size_t)(c.m * c.n));
  ref::matmul({x.data(), w.data(), t, y.data(), c.m, c.n, c.k, nullptr});
  return y;
}

std::vector<float> cpu_matmul(DType t, WeightLayout layout, const std::vector<float>& x, const std::vector<std::byte>& w,
                              const Case& c, TileParams tile = {}) {
  std::vector<float> y((size_t)(c.m * c.n), -777.0f);
  AlignedBuffer ws(cpu::matmul_workspace_bytes(t, c.m, c.k));
  MatmulArgs a{x.data(), w.data(), t, y.data(), c.m, c.n, c.k, ws.data(), tile};
  a.w_layout = layout;
  cpu::matmul(a, pool());
  return y;
}

// x = q * d with f16-exact d and |q| <= 127 survives the kernels' q8
// quantization exactly, so the only difference left to the reference is f32
// rounding: a block or row addressed wrongly cannot hide in the error bound.
std::vector<float> q8_exact_x(int64_t m, int64_t k, Rng& rng) {
  std::vector<float> x((size_t)(m * k));
  for (size_t b = 0; b < x.size() / kQK8_0; ++b) {
    const float d = f16_to_f32(f32_to_f16(rng.uniform(0.001f, 0.05f)));
    for (int j = 0; j < kQK8_0; ++j) x[b * kQK8_0 + j] = (float)rng.integer(-127, 127) * d;
    x[b * kQK8_0] = 127.0f * d;
  }
  return x;
}

// The largest |y - want| over the f64 bound a float dot can be held to,
// sum_j |x_j * w_j| per output: a kernel may sum its partial products in any
// order (ISA families split a block's dot over different lanes), and where
// the terms cancel, an order's rounding is large against y itself, though
// never against this sum. A misaddressed block moves y by O(that sum).
double scaled_error(DType t, const std::vector<float>& y, const std::vector<float>& want, const std::vector<float>& x,
                    const std::vector<std::byte>& w, const Case& c) {
  const uint64_t row_bytes = bytes_for(t, c.k);
  std::vector<float> wrow((size_t)c.k);
  double worst = 0.0;
  for (int64_t n = 0; n < c.n; ++n) {
    dequantize_row(t, w.data() + (uint64_t)n * row_bytes, wrow.data(), c.k);
    for (int64_t m = 0; m < c.m; ++m) {
      double abs_sum = 0.0;
      for (int64_t j = 0; j < c.k; ++j) abs_sum += std::fabs((double)x[(size_t)(m * c.k + j)] * wrow[(size_t)j]);
      const size_t i = (size_t)(m * c.n + n);
      const double err = std::fabs((double)y[i] - (double)want[i]);
      worst = std::max(worst, abs_sum > 0.0 ? err / abs_sum : err);
    }
  }
  return worst;
}

void check_layout(DType t, WeightLayout layout, uint64_t salt) {
  Rng rng(salt);
  for (const Case& c : kCases) {
    INFO(std::string(name(t)) << " m=" << c.m << " n=" << c.n << " k=" << c.k);
    const std::vector<std::byte> w = random_weights(t, c.n, c.k, rng);
    const std::vector<std::byte> w_x = relayout(WeightLayout::rows, layout, t, c.n, c.k, w).value();
    const std::vector<float> x = rng.floats((size_t)(c.m * c.k)), x_exact = q8_exact_x(c.m, c.k, rng);
    const std::vector<float> want = reference(t, x, w, c), want_exact = reference(t, x_exact, w, c);
    for_each_isa([&](cpu::Isa) {
      const std::vector<float> y = cpu_matmul(t, layout, x, w_x, c);
      if (c.m * c.n >= 32) CHECK(rel_error(y, want) <= 1e-2);
      CHECK(scaled_error(t, cpu_matmul(t, layout, x_exact, w_x, c), want_exact, x_exact, w, c) <= 1e-5);
      // Same integer dots in the same float order as the standard layout.
      const std::vector<float> y_rows = cpu_matmul(t, WeightLayout::rows, x, w, c);
      CHECK(std::memcmp(y.data(), y_rows.data(), y.size() * sizeof(float)) == 0);
    });
  }
}

TEST_CASE("q8_0 matmul on rows_x4 weights matches reference, m=1,3,17,64, n not a multiple of 4, on every ISA") {
  check_layout(DType::q8_0, WeightLayout::rows_x4, 301);
}

TEST_CASE("q4_0 matmul on rows_x4 weights matches reference, m=1,3,17,64, n not a multiple of 4, on every ISA") {
  check_layout(DType::q4_0, WeightLayout::rows_x4, 302);
}

TEST_CASE("q8_0 matmul on rows_x16 weights matches reference, m=1..64, n not a multiple of 16, two k-slices, on every ISA") {
  check_layout(DType::q8_0, WeightLayout::rows_x16, 304);
}

TEST_CASE("q4_0 matmul on rows_x16 weights matches reference, m=1..64, n not a multiple of 16, two k-slices, on every ISA") {
  check_layout(DType::q4_0, WeightLayout::rows_x16, 305);
}

// f32, f16 and bf16 in rows_x16 (a dword of 16 rows together; the
// avx512_vnni float panels read it in place, other families gather it
// back): the reference's product within 1e-5 (or, where the kernel rounds x
// to bf16, that rounding's bound), and the bits of the same matmul on rows,
// at m = 1..64, n a multiple of 16 or not, k past two k-slices.
TEST_CASE("f32, f16 and bf16 matmuls on rows_x16 weights match reference and equal rows' bits, on every ISA") {
  Rng rng(306);
  const std::vector<Case> cases = {{1, 1, 2},    {1, 16, 34},    {1, 37, 300},   {3, 17, 64},  {5, 48, 518},
                                   {12, 33, 96}, {13, 129, 258}, {17, 45, 1030}, {64, 20, 126}};
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (const Case& c : cases) {
      INFO(std::string(name(t)) << " m=" << c.m << " n=" << c.n << " k=" << c.k);
      const std::vector<std::byte> w = random_weights(t, c.n, c.k, rng);
      const std::vector<std::byte> w_x = relayout(WeightLayout::rows, WeightLayout::rows_x16, t, c.n, c.k, w).value();
      CHECK(relayout(WeightLayout::rows_x16, WeightLayout::rows, t, c.n, c.k, w_x).value() == w);
      const std::vector<float> x = rng.floats((size_t)(c.m * c.k));
      const std::vector<float> want = reference(t, x, w, c);
      for_each_isa([&](cpu::Isa) {
        INFO("kernel = " << cpu::matmul_kernel_name(t, c.m));
        const std::vector<float> y = cpu_matmul(t, WeightLayout::rows_x16, x, w_x, c);
        check_plain_output("cpu", t, x, w, {c.m, c.n, c.k}, y, want);
        // (oneDNN's sgemm, which f32 on rows takes from 64 rows outside
        // avx512_vnni, sums in its own order; rows_x16 is gathered to tiles.)
        if (cpu::matmul_kernel_name(t, c.m).find("onednn") != std::string::npos) return;
        const std::vector<float> y_rows = cpu_matmul(t, WeightLayout::rows, x, w, c);
        CHECK(std::memcmp(y.data(), y_rows.data(), y.size() * sizeof(float)) == 0);
        // The tiling pass's attributes (the smallest cache block: 16-dword
        // k-slices; one-call items) change the blocking, never a bit.
        for (WeightLayout l : {WeightLayout::rows, WeightLayout::rows_x16}) {
          const std::vector<float> y_tiled = cpu_matmul(t, l, x, l == WeightLayout::rows ? w : w_x, c, TileParams{1, 1});
          CHECK(std::memcmp(y.data(), y_tiled.data(), y.size() * sizeof(float)) == 0);
        }
      });
    }
  // What rows_x16 cannot hold: 16-bit rows of an odd width (half a dword).
  CHECK_FALSE(check_weight_layout(WeightLayout::rows_x16, DType::f16, Shape{4, 7}, "w").is_ok());
  CHECK(check_weight_layout(WeightLayout::rows_x16, DType::f32, Shape{4, 7}, "w").is_ok());
  CHECK_FALSE(check_weight_layout(WeightLayout::rows_x4, DType::f32, Shape{4, 8}, "w").is_ok());
}

TEST_CASE("fused matmul ops read rows_x4 and rows_x16 weights: matmul_qkv and matmul_silu_mul match reference on every ISA") {
  Rng rng(303);
  for (WeightLayout layout : {WeightLayout::rows_x4, WeightLayout::rows_x16})
  for (DType t : {DType::q8_0, DType::q4_0}) {
    const int64_t m = 5, k = 128, q_rows = 24, kv_rows = 7, n = q_rows + 2 * kv_rows;  // 38 rows: a short last group
    INFO(std::string(name(t)) << " " << name(layout));
    const std::vector<std::byte> w = random_weights(t, n, k, rng);
    const std::vector<std::byte> w_x4 = relayout(WeightLayout::rows, layout, t, n, k, w).value();
    const std::vector<float> x = q8_exact_x(m, k, rng);
    std::vector<float> ref_y((size_t)(m * n)), rq((size_t)(m * q_rows)), rk((size_t)(m * kv_rows)), rv((size_t)(m * kv_rows));
    ref::matmul_qkv({{x.data(), w.data(), t, ref_y.data(), m, n, k, nullptr}, rq.data(), rk.data(), rv.data(), q_rows, kv_rows});
    const int64_t f = n / 2;
    std::vector<float> ref_silu((size_t)(m * f));
    ref::matmul_silu_mul({{x.data(), w.data(), t, ref_y.data(), m, n, k, nullptr}, ref_silu.data()});
    for_each_isa([&](cpu::Isa) {
      AlignedBuffer ws(cpu::matmul_workspace_bytes(t, m, k));
      std::vector<float> y((size_t)(m * n)), q((size_t)(m * q_rows)), kk((size_t)(m * kv_rows)), v((size_t)(m * kv_rows));
      MatmulArgs mm{x.data(), w_x4.data(), t, y.data(), m, n, k, ws.data()};
      mm.w_layout = layout;
      cpu::matmul_qkv({mm, q.data(), kk.data(), v.data(), q_rows, kv_rows}, pool());
      CHECK(rel_error(q, rq) <= 1e-5);
      CHECK(rel_error(kk, rk) <= 1e-5);
      CHECK(rel_error(v, rv) <= 1e-5);
      std::vector<float> silu((size_t)(m * f));
      cpu::matmul_silu_mul({mm, silu.data()}, pool());
      CHECK(rel_error(silu, ref_silu) <= 1e-5);
    });
  }
}

}  // namespace
}  // namespace tessera::testing
