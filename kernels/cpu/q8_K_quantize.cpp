// x rows to q8_K blocks (q8_K_activations.h) for the K-quant tiles.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/q8_K_activations.h"

namespace tessera::kernels::cpu::detail {

void quantize_row_q8_K(DType, const float* x, int64_t k, std::byte* row) {
  auto* out = reinterpret_cast<BlockQ8_K*>(row);
  for (int64_t b = 0; b < k / kQK_K; ++b, x += kQK_K) {
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
    BlockQ8_K blk{};
    blk.d = amax / 127.0f;
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    // Round to nearest (ties to even) by adding and subtracting 1.5 * 2^23:
    // exact for |v| < 2^22 (here |v| <= 127), and unlike std::nearbyint not a
    // libm call, so the loop vectorizes (prefill quantizes m * k elements).
    constexpr float kRound = 12582912.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float v = x[j] * inv;
      blk.qs[j] = (int8_t)std::clamp((int)((v + kRound) - kRound), -127, 127);
    }
    for (int s = 0; s < kQK_K / 16; ++s) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += blk.qs[16 * s + j];
      blk.bsums[s] = (int16_t)sum;
    }
    std::memcpy(out + b, &blk, sizeof blk);
  }
}

}  // namespace tessera::kernels::cpu::detail
