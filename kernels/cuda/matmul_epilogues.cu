// The epilogues of the packed matmuls (kernels/reference/fused.cpp
// matmul_silu_mul, matmul_qkv), run over the product y[m, n] the matmul
// wrote: elementwise passes, one thread per output column of a row, rows on
// the grid's y (grid-stride in both, so any m and width fit the grid's
// limits). Reads and writes are consecutive floats across a warp.
#include <cstdint>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/launch.h"

#if defined(TESSERA_GPU_HIP)
#define TS_GPU_ERROR_INVALID_VALUE hipErrorInvalidValue
#else
#define TS_GPU_ERROR_INVALID_VALUE cudaErrorInvalidValue
#endif

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;

// out[r, c] = silu(gate) * up, gate = y[r, c], up = y[r, f + c], with the
// reference's formula and order (kernels/reference/elementwise.cpp silu_mul).
__global__ __launch_bounds__(kThreads) void split_silu_mul_kernel(const float* __restrict__ y, float* __restrict__ out,
                                                                  int64_t m, int64_t f) {
  for (int64_t r = blockIdx.y; r < m; r += gridDim.y) {
    const float* gate = y + r * 2 * f;
    const float* up = gate + f;
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < f; c += (int64_t)gridDim.x * blockDim.x) {
      const float g = gate[c];
      out[r * f + c] = g * (1.0f / (1.0f + expf(-g))) * up[c];
    }
  }
}

// Row r of y[m, q_rows + 2 kv_rows] into q[r], k[r], v[r].
__global__ __launch_bounds__(kThreads) void split_qkv_kernel(const float* __restrict__ y, float* __restrict__ q,
                                                             float* __restrict__ k, float* __restrict__ v, int64_t m,
                                                             int64_t q_rows, int64_t kv_rows) {
  const int64_t width = q_rows + 2 * kv_rows;
  for (int64_t r = blockIdx.y; r < m; r += gridDim.y) {
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < width; c += (int64_t)gridDim.x * blockDim.x) {
      const float val = y[r * width + c];
      if (c < q_rows) q[r * q_rows + c] = val;
      else if (c < q_rows + kv_rows) k[r * kv_rows + (c - q_rows)] = val;
      else v[r * kv_rows + (c - q_rows - kv_rows)] = val;
    }
  }
}

dim3 grid_over(int64_t rows, int64_t cols) {
  return dim3(grid_for(cols, kThreads), (unsigned)(rows < kMaxGridBlocks ? rows : kMaxGridBlocks));
}

}  // namespace

gpuError_t split_silu_mul(const float* y, float* out, int64_t m, int64_t f, gpuStream_t s) {
  if (m < 0 || f < 0) return TS_GPU_ERROR_INVALID_VALUE;
  if (m == 0 || f == 0) return gpuSuccess;
  split_silu_mul_kernel<<<grid_over(m, f), kThreads, 0, s>>>(y, out, m, f);
  return gpuGetLastError();
}

gpuError_t split_qkv(const float* y, float* q, float* k, float* v, int64_t m, int64_t q_rows, int64_t kv_rows,
                     gpuStream_t s) {
  if (m < 0 || q_rows < 0 || kv_rows < 0) return TS_GPU_ERROR_INVALID_VALUE;
  if (m == 0 || q_rows + kv_rows == 0) return gpuSuccess;
  split_qkv_kernel<<<grid_over(m, q_rows + 2 * kv_rows), kThreads, 0, s>>>(y, q, k, v, m, q_rows, kv_rows);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
