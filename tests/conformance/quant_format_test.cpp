// core/quant.h and core/half.h against hand-computed GGUF blocks and known
// IEEE bit patterns (and, where the CPU has F16C, against the hardware
// conversion itself): these are the definitions every kernel is held to.
#include <cstring>
#include <string>
#include <vector>

#include "conformance.h"
#include "support/requirements.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera::testing {
namespace {

uint32_t bits(float f) { return f32_to_bits(f); }

TEST_CASE("q8_0 of [0..31] is d = f16(31/127) = 0x33d0 and qs = round(x / d), as ggml writes it") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[(size_t)j] = (float)j;
  BlockQ8_0 b;
  quantize_row_q8_0(x.data(), &b, 32);
  CHECK(b.d == 0x33d0);
  // round(j * 127 / 31), worked out by hand: no j lands near a .5 tie.
  const int8_t want[32] = {0,  4,  8,  12, 16, 20, 25, 29, 33, 37,  41,  45,  49,  53,  57,  61,
                           66, 70, 74, 78, 82, 86, 90, 94, 98, 102, 107, 111, 115, 119, 123, 127};
  CHECK(std::memcmp(b.qs, want, 32) == 0);
  std::vector<float> y(32);
  dequantize_row_q8_0(&b, y.data(), 32);
  for (int j = 0; j < 32; ++j) CHECK(y[(size_t)j] == (float)want[j] * f16_to_f32(0x33d0));

  for (float& v : x) v = -v;  // the mirror image: same d, negated codes
  quantize_row_q8_0(x.data(), &b, 32);
  CHECK(b.d == 0x33d0);
  for (int j = 0; j < 32; ++j) CHECK(b.qs[j] == -want[j]);
}

TEST_CASE("q8_0 of an all-zero block is d = 0 with zero codes, and dequantizes to zeros") {
  std::vector<float> x(64, 0.0f), y(64, 1.0f);
  BlockQ8_0 b[2];
  quantize_row_q8_0(x.data(), b, 64);
  for (const auto& blk : b) {
    CHECK(blk.d == 0);
    for (int8_t q : blk.qs) CHECK(q == 0);
  }
  dequantize_row_q8_0(b, y.data(), 64);
  CHECK(y == x);
}

TEST_CASE("q4_0 of [-16..15] is d = f16(2.0) = 0x4000 and the nibbles ggml writes (max |x| maps to code 0)") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[(size_t)j] = (float)(j - 16);
  BlockQ4_0 b;
  quantize_row_q4_0(x.data(), &b, 32);
  // -16 has the largest magnitude, so d = -16 / -8 = 2 and code = min(15, (int)(x / 2 + 8.5)):
  // element j in the low nibble of byte j, element j + 16 in the high nibble.
  CHECK(b.d == 0x4000);
  const uint8_t want[16] = {0x80, 0x91, 0x91, 0xa2, 0xa2, 0xb3, 0xb3, 0xc4,
                            0xc4, 0xd5, 0xd5, 0xe6, 0xe6, 0xf7, 0xf7, 0xf8};
  CHECK(std::memcmp(b.qs, want, 16) == 0);
  std::vector<float> y(32);
  dequantize_row_q4_0(&b, y.data(), 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(y[(size_t)j] == 2.0f * (float)((want[j] & 0x0f) - 8));
    CHECK(y[(size_t)j + 16] == 2.0f * (float)((want[j] >> 4) - 8));
  }
}

TEST_CASE("q4_K dequantizes a hand-built super-block: y = d * scale_j * q - dmin * min_j per 32-element sub-block") {
  BlockQ4_K b;
  b.d = 0x3c00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  // 6-bit scales and mins of the 8 sub-blocks, some >= 16 so the packed high bits matter.
  const uint8_t sc[8] = {1, 2, 3, 63, 37, 5, 17, 40};
  const uint8_t mn[8] = {0, 4, 9, 33, 2, 50, 7, 63};
  // GGUF packing: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 split into
  // a low nibble in byte j + 4 and the top 2 bits in bits 6..7 of bytes j - 4 and j.
  std::memset(b.scales, 0, sizeof b.scales);
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
    b.scales[j + 4] = (uint8_t)(mn[j] | ((mn[j + 4] >> 4) << 6));
    b.scales[j + 8] = (uint8_t)((sc[j + 4] & 0x0f) | ((mn[j + 4] & 0x0f) << 4));
  }
  for (int i = 0; i < 128; ++i) b.qs[i] = (uint8_t)((i * 7 + 3) & 0xff);
  std::vector<float> y(256);
  dequantize_row_q4_K(&b, y.data(), 256);
  // Sub-block 2p takes the low nibbles of qs[32p .. 32p+31], sub-block 2p+1 the high nibbles.
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = b.qs[32 * (j / 2) + l];
      const int q = j % 2 == 0 ? byte & 0x0f : byte >> 4;
      CHECK(y[(size_t)(32 * j + l)] == 1.0f * sc[j] * q - 0.5f * mn[j]);
    }
  }
}

TEST_CASE("q8_0 and q4_0 round trips stay within half a step (a full step where q4_0 clamps)") {
  Rng rng(401);
  const int64_t n = 32 * 64;
  const std::vector<float> x = rng.floats((size_t)n, -3.0f, 3.0f);
  std::vector<BlockQ8_0> q8((size_t)n / 32);
  std::vector<BlockQ4_0> q4((size_t)n / 32);
  std::vector<float> y8((size_t)n), y4((size_t)n);
  quantize_row_q8_0(x.data(), q8.data(), n);
  quantize_row_q4_0(x.data(), q4.data(), n);
  dequantize_row_q8_0(q8.data(), y8.data(), n);
  dequantize_row_q4_0(q4.data(), y4.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const float d8 = f16_to_f32(q8[(size_t)i / 32].d), d4 = std::fabs(f16_to_f32(q4[(size_t)i / 32].d));
    // + 127 codes times the f16 rounding of d (2^-11 relative).
    CHECK(std::fabs(y8[(size_t)i] - x[(size_t)i]) <= d8 * (0.5f + 127.0f / 2048.0f));
    CHECK(std::fabs(y4[(size_t)i] - x[(size_t)i]) <= d4 * (1.0f + 8.0f / 2048.0f));
  }
}

TEST_CASE("f32 -> f16 rounds to nearest even at ties, subnormals, overflow, inf and NaN (known bit patterns)") {
  struct Case {
    uint32_t f32;
    uint16_t f16;
    const char* what;
  };
  const Case cases[] = {
      {0x00000000, 0x0000, "+0"},
      {0x80000000, 0x8000, "-0"},
      {0x3f800000, 0x3c00, "1"},
      {0xc0000000, 0xc000, "-2"},
      {0x3dcccccd, 0x2e66, "0.1"},
      {0xc0490fd0, 0xc248, "-3.14159"},
      {0x3f801000, 0x3c00, "1 + 2^-11: tie, rounds to even (down)"},
      {0x3f803000, 0x3c02, "1 + 3*2^-11: tie, rounds to even (up)"},
      {0x3f801008, 0x3c01, "just above the tie rounds up"},
      {0x477fe000, 0x7bff, "65504, the largest half"},
      {0x477fef00, 0x7bff, "65519 still rounds down"},
      {0x477ff000, 0x7c00, "65520 rounds to inf"},
      {0x7f7fffff, 0x7c00, "FLT_MAX overflows to inf"},
      {0x7f800000, 0x7c00, "+inf"},
      {0xff800000, 0xfc00, "-inf"},
      {0x7fc00000, 0x7e00, "quiet NaN"},
      {0xffc00000, 0xfe00, "negative quiet NaN"},
      {0x7f802000, 0x7e01, "signalling NaN is quieted, payload kept"},
      {0x38800000, 0x0400, "2^-14, the smallest normal"},
      {0x387fc000, 0x03ff, "the largest subnormal"},
      {0x33800000, 0x0001, "2^-24, the smallest subnormal"},
      {0x33c00000, 0x0002, "3 * 2^-25: tie between subnormals, rounds to even (up)"},
      {0x33000000, 0x0000, "2^-25: tie with zero, rounds to even (zero)"},
      {0x33000001, 0x0001, "just above 2^-25 rounds up"},
      {0x32ffffff, 0x0000, "just below 2^-25 rounds to zero"},
      {0x00000001, 0x0000, "an f32 subnormal flushes to zero by rounding"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(f32_to_f16(bits_to_f32(c.f32)) == c.f16);
  }
}

TEST_CASE("f16 -> f32 is exact for subnormals, normals, inf and NaN (known bit patterns)") {
  struct Case {
    uint16_t f16;
    uint32_t f32;
  };
  const Case cases[] = {{0x0000, 0x00000000}, {0x8000, 0x80000000}, {0x0001, 0x33800000}, {0x03ff, 0x387fc000},
                        {0x0400, 0x38800000}, {0x3c00, 0x3f800000}, {0x7bff, 0x477fe000}, {0x7c00, 0x7f800000},
                        {0xfc00, 0xff800000}, {0x7e00, 0x7fc00000}, {0x2e66, 0x3dccc000}, {0x8001, 0xb3800000}};
  for (const Case& c : cases) {
    INFO("f16 0x" << std::hex << c.f16);
    CHECK(bits(f16_to_f32(c.f16)) == c.f32);
  }
}

TEST_CASE("f32 -> bf16 rounds to nearest even and keeps NaN quiet, and bf16 -> f32 is a shift") {
  struct Case {
    uint32_t f32;
    uint16_t bf16;
    const char* what;
  };
  const Case cases[] = {
      {0x3f800000, 0x3f80, "1"},
      {0x3f808000, 0x3f80, "tie, rounds to even (down)"},
      {0x3f818000, 0x3f82, "tie, rounds to even (up)"},
      {0x3f808001, 0x3f81, "just above the tie"},
      {0x7f7fffff, 0x7f80, "FLT_MAX rounds to inf"},
      {0x7f800000, 0x7f80, "+inf"},
      {0xff800000, 0xff80, "-inf"},
      {0x7f800001, 0x7fc0, "signalling NaN is quieted"},
      {0xffc00000, 0xffc0, "negative quiet NaN"},
      {0x00000001, 0x0000, "tiny subnormal rounds to zero"},
      {0x00018000, 0x0002, "subnormal tie rounds to even"},
      {0x80000000, 0x8000, "-0"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(f32_to_bf16(bits_to_f32(c.f32)) == c.bf16);
  }
  for (uint32_t h = 0; h < 0x10000; h += 0x0101) CHECK(bits(bf16_to_f32((uint16_t)h)) == h << 16);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hw_f32_to_f16(float f) {
  return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
__attribute__((target("f16c"))) float hw_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

// The avx2 family implies F16C; a CPU without it has nothing to compare with.
const Requirement& f16c_instructions() {
  static const Requirement r = announce(
      {"the F16C comparison", cpu::detect_isa() >= cpu::Isa::avx2 ? "" : "this CPU lacks the AVX2 family, so F16C is not known to be there"});
  return r;
}

TEST_CASE("f16 conversions agree with the CPU's own F16C instructions bit for bit" * needs(f16c_instructions())) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t want = bits(hw_f16_to_f32((uint16_t)h)), got = bits(f16_to_f32((uint16_t)h));
    // F16C quiets a signalling NaN on the way up; the scalar code keeps the bits as they are.
    const bool snan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0 && (h & 0x0200) == 0;
    if (snan)
      CHECK((got | 0x00400000u) == want);
    else if (got != want)
      CHECK_MESSAGE(got == want, "f16 0x" << std::hex << h);
  }
  Rng rng(402);
  size_t mismatches = 0;
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t u = (uint32_t)rng.engine()();
    mismatches += f32_to_f16(bits_to_f32(u)) != hw_f32_to_f16(bits_to_f32(u));
  }
  CHECK(mismatches == 0);
}
#endif

TEST_CASE("quantize_row and dequantize_row dispatch on dtype, and q3_K has no quantizer") {
  const float x[4] = {1.5f, -2.25f, 300.7f, -0.4f};
  uint16_t h[4];
  float y[4];
  CHECK(quantize_row(DType::f16, x, h, 4));
  dequantize_row(DType::f16, h, y, 4);
  CHECK(y[1] == -2.25f);
  CHECK(y[2] == 300.75f);  // 300.7 in f16
  int8_t i8[4];
  CHECK(quantize_row(DType::i8, x, i8, 4));
  CHECK(i8[0] == 2);    // lround: half away from zero
  CHECK(i8[2] == 127);  // clamped
  CHECK(i8[3] == 0);
  BlockQ3_K k;
  std::vector<float> big(256, 1.0f);
  CHECK_FALSE(quantize_row(DType::q3_K, big.data(), &k, 256));
}

}  // namespace
}  // namespace tessera::testing
