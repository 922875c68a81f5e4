// AVX-512 VNNI q8_0 kernels: the activation quantizer (both of this ISA's
// layouts, isa_kernels.h) and q8_0 x q8_0 tiles.
// dpbusd multiplies unsigned by signed bytes, so each weight block enters as
// q + 128 (one xor) and the accumulator starts from the activation row's
// precomputed -128 * sum(x) lanes: the int32 block sum is exact for every
// byte, -128 included, with no abs/sign work per weight block.
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

// q4_0's pair layout (isa_kernels.h): blocks 2p and 2p+1 interleaved by
// halves so that one dpbusd covers half of each, lanes 0-3 for 2p, 4-7 for 2p+1.
void quantize_row_q4_0_pairs(const float* x, int64_t k, std::byte* row) {
  const int64_t nb = k / kQK8_0, pairs = (nb + 1) / 2;
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* corr = reinterpret_cast<int32_t*>(row + pairs * 64);
  auto* ds = reinterpret_cast<float*>(row + pairs * 96);
  const __m256i neg_c = _mm256_set1_epi32(-qx_correction(DType::q4_0));
  for (int64_t p = 0; p < pairs; ++p) {
    float d0 = 0.0f, d1 = 0.0f;
    const __m256i q0 = quantize_block(x + 2 * p * kQK8_0, &d0);
    const __m256i q1 = 2 * p + 1 < nb ? quantize_block(x + (2 * p + 1) * kQK8_0, &d1) : _mm256_setzero_si256();
    const __m256i lo = _mm256_permute2x128_si256(q0, q1, 0x20);  // elements 0..15 of both
    const __m256i hi = _mm256_permute2x128_si256(q0, q1, 0x31);  // elements 16..31 of both
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + p * 64), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + p * 64 + 32), hi);
    const __m256i sums = _mm256_add_epi32(lane_sums(lo), lane_sums(hi));
    // lane_sums gives lanes 0-3 from block 2p and 4-7 from 2p+1; adding lo and
    // hi folds each block's two halves onto the same lanes.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + p * 8), _mm256_mullo_epi32(sums, neg_c));
    _mm256_storeu_ps(ds + p * 8, _mm256_set_m128(_mm_set1_ps(d1), _mm_set1_ps(d0)));
  }
}

}  // namespace

void quantize_row__avx512vnni(DType w_dtype, const float* x, int64_t k, std::byte* row) {
  if (w_dtype == DType::q4_0) return quantize_row_q4_0_pairs(x, k, row);
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

namespace {

// T at byte offset off from p.
template <typename T>
inline const T* at(const void* p, int64_t off) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + off);
}

// The f16 scales of four weight rows' blocks, each 4 times, as f32.
inline __m512 scale_quads(const BlockQ8_0* b0, const int64_t* row_off) {
  // One f16 times 0x0001000100010001 is that f16 in all four 16-bit slots.
  const uint64_t rep = 0x0001000100010001u;
  const long long d0 = (long long)(b0->d * rep), d1 = (long long)(at<BlockQ8_0>(b0, row_off[1])->d * rep);
  const long long d2 = (long long)(at<BlockQ8_0>(b0, row_off[2])->d * rep);
  const long long d3 = (long long)(at<BlockQ8_0>(b0, row_off[3])->d * rep);
  return _mm512_cvtph_ps(_mm256_set_epi64x(d3, d2, d1, d0));
}

// MR x rows against 4 weight rows over all k, in 512-bit lanes. Per block
// the 4 weight rows are regrouped by 16-byte halves, W_lo = [w0[0..15],
// w1[0..15], w2[0..15], w3[0..15]] and W_hi the same for bytes 16..31, so
// one dpbusd against x's matching 16 bytes, broadcast to the four 128-bit
// lanes, serves all 4 rows: lanes 4r..4r+3 of acc[i] take row r (lane 4r+j
// bytes 4j..4j+3 and 16+4j..19+4j), exact in int32 from the quantizer's
// folded correction, and are scaled once per block. The regrouping is paid
// once per block for up to 4 x rows; each x row then costs 2 dpbusd, one
// convert and one multiply-add per block where per-row dots took 4 of each.
// Every output takes the same steps whatever MR, and a tail tile (nr < 4)
// repeats row 0 into its empty slots, so a row's bits depend neither on m
// nor on n nor on its position. The loop walks one pointer per array (x's
// codes, corrections and scales, the weights) and reaches the other rows at
// fixed offsets: 16 row pointers would not fit the general registers.
template <int MR>
void q8_0_tile(const std::byte* x, int64_t xs, const QWeightRows& w, int nr, int64_t nb, float* y, int64_t ldy) {
  int64_t row_off[4];
  for (int r = 0; r < 4; ++r) row_off[r] = (r < nr ? r : 0) * w.row_stride;
  const int8_t* xq = qx_qs(x);
  const int32_t* xc = qx_corr(x, nb);
  const float* xd = qx_d(x, nb);
  const std::byte* wb = w.base;
  const int64_t wstep = w.block_stride;
  __m512 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  const __m512i lo_idx = _mm512_set_epi64(13, 12, 9, 8, 5, 4, 1, 0);
  const __m512i hi_idx = _mm512_set_epi64(15, 14, 11, 10, 7, 6, 3, 2);
  // The next 4 rows start 4 rows' bytes on, in either layout.
  const char* next_span = reinterpret_cast<const char*>(w.base) + 4 * nb * (int64_t)sizeof(BlockQ8_0);
  for (int64_t b = 0; b < nb; ++b, wb += wstep, xq += kQK8_0, xc += 4, ++xd, next_span += 4 * sizeof(BlockQ8_0)) {
    prefetch_next_span<4 * sizeof(BlockQ8_0)>(next_span);
    const auto* b0 = reinterpret_cast<const BlockQ8_0*>(wb);
    const __m512i w01 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0->qs))),
                                           _mm256_loadu_si256(at<__m256i>(b0->qs, row_off[1])), 1);
    const __m512i w23 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(at<__m256i>(b0->qs, row_off[2]))),
                                           _mm256_loadu_si256(at<__m256i>(b0->qs, row_off[3])), 1);
    const __m512i wlo = _mm512_xor_si512(_mm512_permutex2var_epi64(w01, lo_idx, w23), flip);
    const __m512i whi = _mm512_xor_si512(_mm512_permutex2var_epi64(w01, hi_idx, w23), flip);
    const __m512 sw = scale_quads(b0, row_off);
    for (int i = 0; i < MR; ++i) {
      const int8_t* q = at<int8_t>(xq, i * xs);
      __m512i dot = _mm512_broadcast_i32x4(_mm_loadu_si128(at<__m128i>(xc, i * xs)));
      dot = _mm512_dpbusd_epi32(dot, wlo, _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
      dot = _mm512_dpbusd_epi32(dot, whi, _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16))));
      const __m512 scale = _mm512_mul_ps(sw, _mm512_set1_ps(*at<float>(xd, i * xs)));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[i]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[i]);
    for (int r = 0; r < nr; ++r) y[i * ldy + r] = (lanes[4 * r] + lanes[4 * r + 1]) + (lanes[4 * r + 2] + lanes[4 * r + 3]);
  }
}

}  // namespace

void q8_0_tile__avx512vnni(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr,
                           int64_t k, float* y, int64_t ldy) {
  const int64_t nb = k / kQK8_0;
  int i = 0;
  for (; i + 4 <= mr; i += 4) q8_0_tile<4>(x + i * x_stride, x_stride, w, nr, nb, y + i * ldy, ldy);
  for (; i + 2 <= mr; i += 2) q8_0_tile<2>(x + i * x_stride, x_stride, w, nr, nb, y + i * ldy, ldy);
  for (; i < mr; ++i) q8_0_tile<1>(x + i * x_stride, x_stride, w, nr, nb, y + i * ldy, ldy);
}

}  // namespace tessera::kernels::cpu::detail
