// AVX-512 VNNI activation quantizer for the 32-element block formats, in
// this ISA's two layouts (isa_kernels.h): the lanes layout for the q8_0 and
// q4_0 panel kernels (block32_panel_gemm__avx512vnni.cpp), the folded one for
// the other tiles (block32_gemm__avx512vnni.cpp).
// dpbusd multiplies unsigned by signed bytes, so weight codes enter offset
// (q8_0 as q + 128, one xor) and a dot starts from the x row's precomputed
// -c * sum(x): the int32 block sum is exact for every byte, -128 included,
// with no abs/sign work per weight block.
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/simd_util__x86.h"

namespace tessera::kernels::cpu::detail {

namespace {

// One block of 32 floats to q8 codes (returned) and its scale d.
inline __m256i quantize_block(const float* xb, float* d_out) {
  const __m512 v0 = _mm512_loadu_ps(xb);
  const __m512 v1 = _mm512_loadu_ps(xb + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  *d_out = d;
  const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
  const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
  return _mm256_set_m128i(q1, q0);
}

// Sums of each 4 consecutive codes, as 8 int32 lanes.
inline __m256i lane_sums(__m256i q) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q); }

void quantize_row_lanes(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  const int64_t nb = k / kQK8_0;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = const_cast<int32_t*>(qx_lane_corr(row, nb));
  auto* ds = const_cast<float*>(qx_lane_d(row, nb));
  const int32_t c = qx_correction(w_dtype);
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i q = quantize_block(x + b * kQK8_0, ds + b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kQK8_0), q);
    const __m256i ls = lane_sums(q);
    corr[b] = -c * _mm512_reduce_add_epi32(_mm512_zextsi256_si512(ls));
  }
}

}  // namespace

void quantize_row__avx512vnni(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  if (w_dtype == DType::q8_0 || w_dtype == DType::q4_0) return quantize_row_lanes(w_dtype, x, k, row);
  const int64_t nb = k / kQK8_0;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = const_cast<int32_t*>(qx_corr(row, nb));
  auto* ds = const_cast<float*>(qx_d(row, nb));
  const bool sums = qx_holds_sums(w_dtype);
  const __m256i neg_c = _mm256_set1_epi32(-qx_correction(w_dtype));
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i q = quantize_block(x + b * kQK8_0, ds + b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kQK8_0), q);
    // Lanes c0..c7 (4 codes each) folded to the tile's lanes (isa_kernels.h):
    // lane j takes bytes 4j..4j+3 and 16+4j..19+4j, so c_j + c_(j+4).
    const __m256i ls = lane_sums(q);
    if (sums) {  // q4_1, q5_1: s lanes, d * the folded sums
      const __m128i folded = _mm_add_epi32(_mm256_castsi256_si128(ls), _mm256_extracti128_si256(ls, 1));
      _mm_storeu_ps(reinterpret_cast<float*>(corr + b * 4), _mm_mul_ps(_mm_cvtepi32_ps(folded), _mm_set1_ps(ds[b])));
      continue;
    }
    const __m256i c = _mm256_mullo_epi32(ls, neg_c);
    const __m128i folded = _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(corr + b * 4), folded);
  }
}

}  // namespace tessera::kernels::cpu::detail
