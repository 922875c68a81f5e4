// The paged attention inner kernel (attention_block.h) on AVX-512: 16 lanes,
// four vectors (64 columns) of every head of a set in registers per pass,
// f16 widened by vcvtph2ps, bf16 by a shift, tails by masked loads; a q8_0
// block's 16 bytes by vpmovsxbd and a scale, fp8's moved into f16 bit
// patterns (the exponent bias 7 -> 15 is a factor 2^8 folded into the scale).
#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/exp_f32__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

struct V512 {
  static constexpr int L = 16, kDRegs = 4, kScorePositions = 4;
  using R = __m512;
  static __mmask16 mask(int n) { return (__mmask16)((1u << n) - 1u); }
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_n(float* p, R v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static R widen(__m256i h, Kv t) {
    return t == Kv::f16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  template <Kv T>
  static R load_kv(const void* row, int64_t i) {
    if constexpr (T == Kv::f32) return _mm512_loadu_ps(static_cast<const float*>(row) + i);
    else if constexpr (is_block(T)) return load_block<T>(row, i);
    else return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(row) + i)), T);
  }
  template <Kv T>
  static R load_kv_n(const void* row, int64_t i, int n) {
    if constexpr (T == Kv::f32) return _mm512_maskz_loadu_ps(mask(n), static_cast<const float*>(row) + i);
    else return widen(_mm256_maskz_loadu_epi16(mask(n), static_cast<const uint16_t*>(row) + i), T);
  }
  // 16 elements of the 32-element block holding element i (i a multiple of 16).
  template <Kv T>
  static R load_block(const void* row, int64_t i) {
    const uint8_t* blk = static_cast<const uint8_t*>(row) + (i >> 5) * 34;
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + (i & 31)));
    const float d = _cvtsh_ss(*reinterpret_cast<const uint16_t*>(blk));
    if constexpr (T == Kv::q8_0) return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(d));
    // byte << 8, arithmetic >> 1 (the sign lands at bit 15 and 14), bit 14 cleared:
    // the sign at 15, the exponent at 13..10 and the mantissa at 9..7, an f16 of value e4m3 / 2^8.
    const __m256i x = _mm256_slli_epi16(_mm256_cvtepu8_epi16(q), 8);
    __m256i h = _mm256_and_si256(_mm256_srai_epi16(x, 1), _mm256_set1_epi16((short)0xBF80));
    // 0x7F / 0xFF (e4m3's NaN) land on exponent 15, mantissa 7: made an f16 NaN, as the reference reads them.
    const __mmask16 nan = _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(0x3F80));
    h = _mm256_mask_mov_epi16(h, nan, _mm256_set1_epi16(0x7E00));
    return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(d * 256.0f));
  }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static float hmax(R a) { return _mm512_reduce_max_ps(a); }
  static float hsum(R a) { return _mm512_reduce_add_ps(a); }
  static R exp(R a) { return exp_f32x16(a); }
  // Lane o = the sum of row o (16 rows of 16): pairs within 128-bit lanes,
  // then quads, then across the 128-bit lanes; 45 operations for 16 sums.
  static R sum_rows(const float* rows) {
    R s1[8], s2[4], s3[2];
    for (int i = 0; i < 8; ++i) {
      const R a = load(rows + 2 * i * 16), b = load(rows + (2 * i + 1) * 16);
      s1[i] = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));  // per 128: a b a b
    }
    for (int i = 0; i < 4; ++i) {
      const __m512d a = _mm512_castps_pd(s1[2 * i]), b = _mm512_castps_pd(s1[2 * i + 1]);
      s2[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));  // per 128: rows 4i..4i+3
    }
    for (int i = 0; i < 2; ++i)
      s3[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s2[2 * i], s2[2 * i + 1], 0x88), _mm512_shuffle_f32x4(s2[2 * i], s2[2 * i + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(s3[0], s3[1], 0x88), _mm512_shuffle_f32x4(s3[0], s3[1], 0xdd));
  }
};

}  // namespace

void attention_block__avx512vnni(const AttentionBlock& b) { attention_block<V512>(b); }
void attention_exp__avx512vnni(const float* x, float* y, int64_t n) { exp_array<V512>(x, y, n); }

}  // namespace tessera::kernels::cpu::detail
