#include <vector>

#include "core/quant.h"
#include "kernels/reference/reference.h"

namespace tessera::kernels::reference {

// Each weight row is dequantized with the format's own definition, then
// dotted with every x row in f64. Activations are not quantized here.
void matmul(const MatmulArgs& a) {
  const uint64_t row_bytes = bytes_for(a.w_dtype, a.k);
  const auto* w = static_cast<const std::byte*>(a.w);
  std::vector<float> wrow((size_t)a.k);
  for (int64_t n = 0; n < a.n; ++n) {
    dequantize_row(a.w_dtype, w + (uint64_t)n * row_bytes, wrow.data(), a.k);
    for (int64_t m = 0; m < a.m; ++m) {
      const float* x = a.x + m * a.k;
      double acc = 0.0;
      for (int64_t j = 0; j < a.k; ++j) acc += (double)x[j] * wrow[(size_t)j];
      a.y[m * a.n + n] = (float)acc;
    }
  }
}

}  // namespace tessera::kernels::reference
