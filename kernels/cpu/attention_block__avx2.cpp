// The paged attention inner kernel (attention_block.h) on AVX2: 8 lanes, two
// vectors (16 columns) of every head of a set in registers per pass (16
// ymm registers in all), f16 widened by vcvtph2ps, bf16 by a shift; tails
// go through a zeroed copy. A q8_0 block's 8 bytes widen by vpmovsxbd and a
// scale, fp8's move into f16 bit patterns (bias 7 -> 15: 2^8 in the scale).
#include <cstring>

#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/exp_f32__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

struct V256 {
  static constexpr int L = 8, kDRegs = 2, kScorePositions = 2;
  using R = __m256;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R load_n(const float* p, int n) {
    float t[8] = {};
    std::memcpy(t, p, (size_t)n * sizeof(float));
    return _mm256_loadu_ps(t);
  }
  static void store_n(float* p, R v, int n) {
    float t[8];
    _mm256_storeu_ps(t, v);
    std::memcpy(p, t, (size_t)n * sizeof(float));
  }
  static R widen(__m128i h, Kv t) {
    return t == Kv::f16 ? _mm256_cvtph_ps(h) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  // 8 elements of the 32-element block holding element i (i a multiple of 8).
  template <Kv T>
  static R load_block(const void* row, int64_t i) {
    const uint8_t* blk = static_cast<const uint8_t*>(row) + (i >> 5) * 34;
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + (i & 31)));
    const float d = _cvtsh_ss(*reinterpret_cast<const uint16_t*>(blk));
    if constexpr (T == Kv::q8_0) return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(d));
    // byte << 8, arithmetic >> 1, bit 14 cleared: the f16 of value e4m3 / 2^8.
    const __m128i x = _mm_slli_epi16(_mm_cvtepu8_epi16(q), 8);
    __m128i h = _mm_and_si128(_mm_srai_epi16(x, 1), _mm_set1_epi16((short)0xBF80));
    // 0x7F / 0xFF (e4m3's NaN) land on exponent 15, mantissa 7: made an f16 NaN, as the reference reads them.
    const __m128i nan = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7FFF)), _mm_set1_epi16(0x3F80));
    h = _mm_or_si128(h, _mm_and_si128(nan, _mm_set1_epi16(0x7E00)));
    return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(d * 256.0f));
  }
  template <Kv T>
  static R load_kv(const void* row, int64_t i) {
    if constexpr (T == Kv::f32) return _mm256_loadu_ps(static_cast<const float*>(row) + i);
    else if constexpr (is_block(T)) return load_block<T>(row, i);
    else return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i)), T);
  }
  template <Kv T>
  static R load_kv_n(const void* row, int64_t i, int n) {
    if constexpr (T == Kv::f32) {
      return load_n(static_cast<const float*>(row) + i, n);
    } else {
      uint16_t t[8] = {};
      std::memcpy(t, static_cast<const uint16_t*>(row) + i, (size_t)n * sizeof(uint16_t));
      return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)), T);
    }
  }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static float hmax(R a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  static float hsum(R a) { return hsum256(a); }
  static R exp(R a) { return exp_f32x8(a); }
  // Lane o = the sum of row o (8 rows of 8): pairs, quads within 128-bit halves, then the halves.
  static R sum_rows(const float* rows) {
    R s1[4], s2[2];
    for (int i = 0; i < 4; ++i) {
      const R a = load(rows + 2 * i * 8), b = load(rows + (2 * i + 1) * 8);
      s1[i] = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    }
    for (int i = 0; i < 2; ++i) {
      const __m256d a = _mm256_castps_pd(s1[2 * i]), b = _mm256_castps_pd(s1[2 * i + 1]);
      s2[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)), _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(s2[0], s2[1], 0x20), _mm256_permute2f128_ps(s2[0], s2[1], 0x31));
  }
};

}  // namespace

void attention_block__avx2(const AttentionBlock& b) { attention_block<V256>(b); }
void attention_exp__avx2(const float* x, float* y, int64_t n) { exp_array<V256>(x, y, n); }

}  // namespace tessera::kernels::cpu::detail
