// CPU matmul against the reference (weights dequantized by their format's
// definition, x in f32, f64 accumulation), for every weight dtype, every
// runnable ISA, and odd shapes.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conformance.h"

namespace tessera::testing {
namespace {

using Shape = MatmulShape;

// Relative-error bounds, ||y - ref|| / ||ref||:
//  f32, f16, bf16: the weights are exact in f32 on both sides, so only f32
//    accumulation order differs from the f64 reference: 1e-5.
//  q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl: the CPU quantizes x to q8 blocks
//    (8-bit, one scale per 32), which alone costs ~0.4% rms for uniform x;
//    the reference does not: 1e-2. (Checked where there are >= 32 outputs; a
//    handful of dots can cancel to a tiny ||ref||. Every output also meets
//    the worst case, q8_error_bound in conformance.h.)
//  q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs: the CPU quantizes x to q8_K blocks
//    (8-bit, one scale per 256): for uniform x the largest |x| of 256 is as
//    close to the range end as that of 32, so the rms cost is the same
//    ~0.4%: 1e-2, and the worst case (q8_error_bound, conformance.h) with d per 256.
//  bf16 where the kernel multiplies in bf16 (rounds_x_to_bf16): x rounded to
//    8 significant bits, ~2^-9.5 rms for uniform x: 4e-3, and the worst case
//    (bf16_x_error_bound, conformance.h) per output.
double bound(DType t, int64_t m) {
  return quantizes_x(t) ? 1e-2 : rounds_x_to_bf16("cpu", t, m) ? 4e-3 : 1e-5;
}

std::vector<float> run_reference(DType t, const std::vector<float>& x, const std::vector<std::byte>& w, Shape s) {
  std::vector<float> y((size_t)(s.m * s.n));
  ref::matmul({x.data(), w.data(), t, y.data(), s.m, s.n, s.k, nullptr});
  return y;
}

std::vector<float> run_cpu(DType t, const std::vector<float>& x, const std::vector<std::byte>& w, Shape s) {
  std::vector<float> y((size_t)(s.m * s.n), -777.0f);
  AlignedBuffer ws(cpu::matmul_workspace_bytes(t, s.m, s.k));
  cpu::matmul({x.data(), w.data(), t, y.data(), s.m, s.n, s.k, ws.data()}, pool());
  return y;
}

void check_shapes(DType t, const std::vector<Shape>& shapes, uint64_t salt) {
  Rng rng(salt);
  for (const Shape& s : shapes) {
    INFO(std::string(name(t)) << " m=" << s.m << " n=" << s.n << " k=" << s.k);
    const std::vector<float> x = rng.floats((size_t)(s.m * s.k));
    const std::vector<std::byte> w = random_weights(t, s.n, s.k, rng);
    const std::vector<float> want = run_reference(t, x, w, s);
    const std::vector<float> worst = quantizes_x(t) ? q8_error_bound(t, x, w, s.m, s.n, s.k) : std::vector<float>{};
    for_each_isa([&](cpu::Isa) {
      INFO("kernel = " << cpu::matmul_kernel_name(t, s.m));
      const std::vector<float> y = run_cpu(t, x, w, s);
      const double err = rel_error(y, want);
      // The norm check needs enough outputs, and with block mins enough x
      // rows that ||ref|| is not near zero by chance (conformance.h).
      if (!quantizes_x(t) || (s.m * s.n >= 32 && (!has_block_mins(t) || s.m >= 16)))
        CHECK_MESSAGE(err <= bound(t, s.m), "relative error " << err << " > " << bound(t, s.m));
      const std::vector<float> bf16_worst =
          rounds_x_to_bf16("cpu", t, s.m) ? bf16_x_error_bound(t, x, w, s.m, s.n, s.k) : std::vector<float>{};
      const size_t over = beyond_bound(y, want, worst) + beyond_bound(y, want, bf16_worst);
      CHECK_MESSAGE(over == 0, over << " outputs beyond the worst-case rounding error of x (q8 or bf16)");
    });
  }
}

const std::vector<Shape> kPlainShapes = {{1, 1, 1},      {1, 33, 5},     {3, 17, 63},  {7, 64, 172},
                                         {17, 45, 96},   {1, 257, 2048}, {5, 31, 300}, {16, 70, 64},
                                         {9, 300, 1000}, {64, 45, 63},   {70, 33, 172}};
const std::vector<Shape> kBlockShapes = {{1, 1, 32},     {1, 33, 96},    {3, 17, 64}, {7, 33, 96},  {17, 45, 160},
                                         {1, 515, 2048}, {5, 130, 4096}, {16, 9, 32}, {33, 40, 256}};
const std::vector<Shape> kSuperBlockShapes = {{1, 3, 256}, {3, 17, 512}, {7, 33, 256}, {17, 5, 768}, {1, 130, 2048}};

TEST_CASE("f32 matmul matches reference at odd shapes (m=1,3,7 on our tiles, from 16 on the float panels or oneDNN) on every ISA") {
  check_shapes(DType::f32, kPlainShapes, 101);
}

TEST_CASE("f16 matmul matches reference at odd shapes on every ISA") { check_shapes(DType::f16, kPlainShapes, 102); }

TEST_CASE("bf16 matmul matches reference at odd shapes on every ISA") { check_shapes(DType::bf16, kPlainShapes, 103); }

TEST_CASE("q8_0 matmul matches reference within activation-quantization error (m=1,3,7,17 and k=32..4096) on every ISA") {
  check_shapes(DType::q8_0, kBlockShapes, 104);
}

TEST_CASE(
    "q4_0 matmul matches reference within activation-quantization error (m=7, n=33, k=96 and more) on every ISA") {
  check_shapes(DType::q4_0, kBlockShapes, 105);
}

// Where the avx512_vnni panel kernels change course: the few-rows pass below
// 8 x rows, x-row passes of 6 and blocks of 60, weight groups of 16 rows (a
// short last one) taken in pairs (an odd last one alone) and calls of 8
// groups, k-slices of 128 blocks (k = 4128: a slice of one block after).
const std::vector<Shape> kPanelShapes = {{2, 17, 64},   {5, 33, 4128},  {12, 16, 96},  {13, 129, 160},
                                         {16, 300, 32}, {17, 45, 4160}, {60, 7, 96},   {61, 131, 64},
                                         {64, 33, 288}, {65, 40, 96},   {512, 19, 64}, {25, 257, 4128}};
TEST_CASE("q8_0 and q4_0 matmul match reference at the panel kernels' edges (m 2..512, n 7..300, k to 4160) on every ISA") {
  check_shapes(DType::q8_0, kPanelShapes, 109);
  check_shapes(DType::q4_0, kPanelShapes, 110);
}

// Rows 0, 10 and 20 computed alone, and rows 9-11 as a call of 3, must have
// the bits they have among all.m rows, on every ISA.
void check_rows_alone(DType t, const Shape& all, Rng& rng) {
  const std::vector<float> x = rng.floats((size_t)(all.m * all.k));
  const std::vector<std::byte> w = random_weights(t, all.n, all.k, rng);
  for_each_isa([&](cpu::Isa) {
    INFO(name(t) << " kernel = " << cpu::matmul_kernel_name(t, all.m));
    const std::vector<float> y = run_cpu(t, x, w, all);
    for (int64_t r : {0, 10, 20}) {
      const std::vector<float> xr(x.begin() + r * all.k, x.begin() + (r + 1) * all.k);
      const std::vector<float> alone = run_cpu(t, xr, w, {1, all.n, all.k});
      CHECK_MESSAGE(std::memcmp(alone.data(), y.data() + r * all.n, sizeof(float) * (size_t)all.n) == 0, "row " << r << " alone");
    }
    const std::vector<float> x3(x.begin() + 9 * all.k, x.begin() + 12 * all.k);  // rows 9..11
    const std::vector<float> three = run_cpu(t, x3, w, {3, all.n, all.k});
    CHECK_MESSAGE(std::memcmp(three.data(), y.data() + 9 * all.n, sizeof(float) * (size_t)(3 * all.n)) == 0, "rows 9-11 as 3");
  });
}

// The q8_0/q4_0 panel passes of 1, 3 and 6 rows (decode reads the whole k
// in one slice, prefill in slices of 128 blocks) must agree to the bit
// (batch_invariance_test.cpp has the general case at small k).
TEST_CASE("q8_0 and q4_0: a row computed alone or among 3 has the bits it has among 21 rows, k = 4160 (two k-slices), on every ISA") {
  Rng rng(111);
  for (DType t : {DType::q8_0, DType::q4_0}) check_rows_alone(t, {21, 37, 4160}, rng);
}

TEST_CASE("q2_K, q3_K, q4_K, q5_K and q6_K matmul match reference within activation-quantization error at odd shapes on every ISA") {
  for (DType t : {DType::q2_K, DType::q3_K, DType::q4_K, DType::q5_K, DType::q6_K})
    check_shapes(t, kSuperBlockShapes, 106 + (uint64_t)t);
}

// Where the avx512_vnni K-quant panels change course: the tiles below 12 x
// rows, passes of 6 x rows and blocks of 120, weight groups of 16 rows (a
// short last one) taken in pairs (an odd last one alone) and calls of 128
// rows, k-slices of 8 super-blocks (k = 2304: a slice of one after).
const std::vector<Shape> kKPanelShapes = {{11, 33, 256},  {12, 17, 512},   {13, 45, 2304}, {16, 129, 768},
                                          {121, 19, 256}, {30, 150, 2304}, {17, 16, 4352}};
TEST_CASE("q4_K, q5_K and q6_K matmul match reference at the panel kernels' edges (m 11..121, n 16..150, k to 4352) on every ISA") {
  for (DType t : {DType::q4_K, DType::q5_K, DType::q6_K}) check_shapes(t, kKPanelShapes, 150 + (uint64_t)t);
}

// The tiles (below 12 x rows: one row four weight rows a step, or up to 4
// rows a pass) and the panels (12 and more) must agree to the bit, across
// k-slices and a short last group of weight rows (batch_invariance_test.cpp
// has the general case at k = 512).
TEST_CASE("q4_K, q5_K and q6_K: a row computed alone or among 3 has the bits it has among 21 rows, k = 4352 (three k-slices), n = 37, on every ISA") {
  Rng rng(160);
  for (DType t : {DType::q4_K, DType::q5_K, DType::q6_K}) check_rows_alone(t, {21, 37, 4352}, rng);
}

TEST_CASE(
    "q4_1, q5_0, q5_1 and iq4_nl matmul match reference within activation-quantization error at odd shapes on every "
    "ISA") {
  for (DType t : {DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl}) check_shapes(t, kBlockShapes, 120 + (uint64_t)t);
}

TEST_CASE("iq4_xs matmul matches reference within activation-quantization error at odd shapes on every ISA") {
  check_shapes(DType::iq4_xs, kSuperBlockShapes, 140 + (uint64_t)DType::iq4_xs);
}

TEST_CASE("matmul matches reference at 25 random shapes per weight dtype (m 1..20, n 1..70) on every ISA") {
  Rng rng(108);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K, DType::q5_K, DType::q6_K,
                  DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q2_K, DType::q3_K, DType::iq4_xs}) {
    const int32_t block = (int32_t)traits(t).block_elems;
    std::vector<Shape> shapes;
    for (int i = 0; i < 25; ++i) {
      const int64_t k = block == 1 ? rng.integer(1, 300) : (int64_t)block * rng.integer(1, block == kQK_K ? 3 : 12);
      shapes.push_back({rng.integer(1, 20), rng.integer(1, 70), k});
    }
    check_shapes(t, shapes, 200 + (uint64_t)t);
  }
}

// x built as q * d with an f16-exact d and max |q| = 127 per block (32
// elements for q8_0 activations, 256 for q8_K) survives quantization
// exactly, so the integer paths must then agree with the reference to f32
// rounding: this catches block, lane, scale and offset mistakes that the
// 1e-2 bound above would let through.
TEST_CASE("every quantized matmul is exact to f32 rounding when x is exactly representable in q8") {
  Rng rng(107);
  for (DType t : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q2_K,
                  DType::q3_K, DType::q4_K, DType::q5_K, DType::q6_K, DType::iq4_xs}) {
    const int64_t xb = x_quant_block(t);
    const std::vector<Shape> shapes = xb == kQK_K ? std::vector<Shape>{{1, 37, 256}, {7, 33, 512}, {17, 12, 768}, {1, 260, 1024}}
                                                  : std::vector<Shape>{{1, 37, 96}, {7, 33, 96}, {17, 12, 256}, {1, 260, 1024}};
    for (const Shape& s : shapes) {
      INFO(std::string(name(t)) << " m=" << s.m << " n=" << s.n << " k=" << s.k);
      std::vector<float> x((size_t)(s.m * s.k));
      for (size_t b = 0; b < x.size() / (size_t)xb; ++b) {
        const float d = f16_to_f32(f32_to_f16(rng.uniform(0.001f, 0.05f)));
        for (int64_t j = 0; j < xb; ++j) x[b * xb + j] = (float)rng.integer(-127, 127) * d;
        x[b * xb + (size_t)rng.integer(0, (int32_t)xb - 1)] = (rng.integer(0, 1) ? 127.0f : -127.0f) * d;
      }
      const std::vector<std::byte> w = random_weights(t, s.n, s.k, rng);
      const std::vector<float> want = run_reference(t, x, w, s);
      for_each_isa([&](cpu::Isa) {
        INFO("kernel = " << cpu::matmul_kernel_name(t, s.m));
        const double err = rel_error(run_cpu(t, x, w, s), want);
        CHECK_MESSAGE(err <= 1e-5, "relative error " << err);
      });
    }
  }
}

TEST_CASE("matmul with k = 0 writes zeros") {
  std::vector<float> y(6, 5.0f);
  for_each_isa([&](cpu::Isa) {
    cpu::matmul({nullptr, nullptr, DType::f16, y.data(), 2, 3, 0, nullptr}, pool());
    CHECK(max_abs_diff(y, std::vector<float>(6, 0.0f)) == 0.0);
  });
}

TEST_CASE("matmul kernel names say dtype, shape and ISA") {
  CHECK(cpu::matmul_supports(DType::q8_0));
  CHECK(cpu::matmul_supports(DType::q4_K));
  CHECK_FALSE(cpu::matmul_supports(DType::i8));
  CHECK_FALSE(cpu::matmul_supports(DType::i32));
  CHECK(cpu::matmul_workspace_bytes(DType::f32, 7, 64) == 0);
  CHECK(cpu::matmul_workspace_bytes(DType::q8_0, 7, 64) >= 7 * 2 * sizeof(BlockQ8_0));
  // q8_K: per 256 x elements a f32 scale, 256 int8 and 16 int16 sums.
  CHECK(cpu::matmul_workspace_bytes(DType::q4_K, 7, 512) >= 7 * 2 * (4 + 256 + 32));
  CHECK(cpu::matmul_workspace_bytes(DType::iq4_xs, 7, 512) >= 7 * 2 * (4 + 256 + 32));
  // q8 blocks with their sums (q4_1, q5_1): per 32 x elements a scale, 32 int8 and a sum.
  CHECK(cpu::matmul_workspace_bytes(DType::q5_1, 7, 64) >= 7 * 2 * (4 + 32 + 4));
  for_each_isa([&](cpu::Isa isa) {
    const std::string family = isa == cpu::Isa::avx512_vnni ? "avx512vnni" : std::string(cpu::name(isa));
    // neon_dotprod has its own tiles for these types and leaves the others to
    // portable's; the kernel name says which runs.
    const auto sfx_of = [&](DType t) -> std::string {
      if (isa != cpu::Isa::neon_dotprod) return family;
      for (DType own : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K, DType::q6_K})
        if (t == own) return family;
      return "portable";
    };
    CHECK(cpu::matmul_kernel_name(DType::q8_0, 1) == "q8_0_gemv__" + sfx_of(DType::q8_0));
    CHECK(cpu::matmul_kernel_name(DType::q4_0, 7) == "q4_0_gemm__" + sfx_of(DType::q4_0));
    CHECK(cpu::matmul_kernel_name(DType::f16, 1) == "f16_gemv__" + sfx_of(DType::f16));
    CHECK(cpu::matmul_kernel_name(DType::f32, 1) == "f32_gemv__" + sfx_of(DType::f32));
    CHECK(cpu::matmul_kernel_name(DType::f32, 3) == "f32_gemm__" + sfx_of(DType::f32));
    if (isa == cpu::Isa::avx512_vnni) {
      // The float panels at every m (named gemv/gemm as the tiles were), ahead
      // of oneDNN's sgemm, which they beat; bf16 on the bf16 dot only where
      // TESSERA_CPU_BF16_DOT=1 asks and the CPU has AVX512-BF16.
      const char* asked = std::getenv("TESSERA_CPU_BF16_DOT");
#if defined(__x86_64__)
      const bool dots = __builtin_cpu_supports("avx512bf16") && asked != nullptr && std::string(asked) == "1";
#else
      const bool dots = false;
#endif
      const std::string bf16_isa = dots ? "avx512bf16" : "avx512vnni";
      CHECK(cpu::matmul_kernel_name(DType::f32, 64) == "f32_gemm__avx512vnni");
      CHECK(cpu::matmul_kernel_name(DType::f32, 64, true) == "f32_gemm__avx512vnni");
      CHECK(cpu::matmul_kernel_name(DType::f16, 16) == "f16_gemm__avx512vnni");
      CHECK(cpu::matmul_kernel_name(DType::bf16, 1) == "bf16_gemv__" + bf16_isa);
      CHECK(cpu::matmul_kernel_name(DType::bf16, 8) == "bf16_gemm__" + bf16_isa);
      CHECK(cpu::matmul_compute_dtype(DType::bf16, 8) == (dots ? ComputeDtype::bf16_dot : ComputeDtype::f32_fma));
      CHECK(cpu::matmul_preferred_layout(DType::f16) == WeightLayout::rows_x16);
    } else {
#if defined(TESSERA_ONEDNN)
      CHECK(cpu::matmul_kernel_name(DType::f32, 64) == "f32_gemm__onednn");
#else  // built without oneDNN: our tiles at every m
      CHECK(cpu::matmul_kernel_name(DType::f32, 64) == "f32_gemm__" + sfx_of(DType::f32));
#endif
      CHECK(cpu::matmul_kernel_name(DType::f16, 64) == "f16_gemm__" + sfx_of(DType::f16));
    }
    CHECK(cpu::matmul_kernel_name(DType::q4_K, 1) == "q4_K_gemv__" + sfx_of(DType::q4_K));
    CHECK(cpu::matmul_kernel_name(DType::q5_K, 7) == "q5_K_gemm__" + sfx_of(DType::q5_K));
    CHECK(cpu::matmul_kernel_name(DType::q6_K, 1) == "q6_K_gemv__" + sfx_of(DType::q6_K));
    CHECK(cpu::matmul_kernel_name(DType::q3_K, 1) == "q3_K_gemv__" + sfx_of(DType::q3_K));
    CHECK(cpu::matmul_kernel_name(DType::q2_K, 5) == "q2_K_gemm__" + sfx_of(DType::q2_K));
    CHECK(cpu::matmul_kernel_name(DType::q4_1, 1) == "q4_1_gemv__" + sfx_of(DType::q4_1));
    CHECK(cpu::matmul_kernel_name(DType::q5_0, 7) == "q5_0_gemm__" + sfx_of(DType::q5_0));
    CHECK(cpu::matmul_kernel_name(DType::q5_1, 1) == "q5_1_gemv__" + sfx_of(DType::q5_1));
    CHECK(cpu::matmul_kernel_name(DType::iq4_nl, 3) == "iq4_nl_gemm__" + sfx_of(DType::iq4_nl));
    CHECK(cpu::matmul_kernel_name(DType::iq4_xs, 1) == "iq4_xs_gemv__" + sfx_of(DType::iq4_xs));
    // Every quantized type has integer tiles: no kernel name says "dequant".
    for (int t = 0; t < kDTypeCount; ++t)
      for (int64_t m : {1, 7}) {
        const std::string kernel = cpu::matmul_kernel_name((DType)t, m);
        CHECK_MESSAGE(kernel.find("dequant") == std::string::npos, kernel);
        // fp8_e4m3 is a KV pool type (--kv-type), never a weight's.
        if (traits((DType)t).quantized && (DType)t != DType::fp8_e4m3) CHECK_MESSAGE(kernel != "unsupported", std::string(name((DType)t)));
      }
    CHECK(cpu::matmul_kernel_name(DType::i8, 1) == "unsupported");
  });
}

}  // namespace
}  // namespace tessera::testing
