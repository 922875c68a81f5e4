// The ops over whole rows: one block per row (rows of the step are few and
// wide: a hidden state of 2048-8192 values, a vocabulary of 32-256 K), its
// threads striding over the row and meeting in block_sum / block_max. Sums
// are f32 where the reference (kernels/reference) uses f64: a row of 8192
// squares in f32 differs from it by about 1e-6 relative, inside the f32 bound.
#include "kernels/cuda/dequant.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;

// Rows are spread over x and y of the grid so that any count fits the limits.
__device__ inline int64_t row_index() { return (int64_t)blockIdx.y * gridDim.x + blockIdx.x; }

dim3 grid_rows(int64_t rows) {
  const int64_t x = rows < 65535 ? rows : 65535;
  return dim3((unsigned)(x < 1 ? 1 : x), (unsigned)((rows + x - 1) / (x < 1 ? 1 : x)));
}

// out = weight * x / sqrt(mean(x²) + eps); with `b`, x = a + b is stored to
// `sum` first (add_rms_norm). out may alias a, b or sum.
__global__ void rms_norm_kernel(const float* a, const float* b, float* sum, const float* weight, float* out, int64_t rows,
                                int64_t dim, float eps) {
  __shared__ float scratch[32];
  const int64_t r = row_index();
  if (r >= rows) return;
  const float* xa = a + r * dim;
  const float* xb = b ? b + r * dim : nullptr;
  float* xs = sum ? sum + r * dim : nullptr;
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
    const float v = xb ? xa[j] + xb[j] : xa[j];
    if (xs) xs[j] = v;
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  const float inv = rsqrtf(ss / (float)dim + eps);
  const float* x = xs ? xs : xa;  // each thread reads back only the elements it wrote
  float* o = out + r * dim;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) o[j] = weight[j] * (inv * x[j]);
}

// Max-subtracted softmax of each row, in place.
__global__ void softmax_kernel(float* x, int64_t rows, int64_t cols) {
  __shared__ float scratch[32];
  const int64_t r = row_index();
  if (r >= rows) return;
  float* row = x + r * cols;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_max(m, scratch);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
  s = block_sum(s, scratch);
  const float inv = 1.0f / s;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) row[j] = expf(row[j] - m) * inv;
}

// The first index of each row's maximum (NaNs never win, as in the reference's `>`).
__global__ void argmax_kernel(const float* x, int32_t* out, int64_t rows, int64_t cols) {
  __shared__ float best_v[1024];
  __shared__ int64_t best_i[1024];
  const int64_t r = row_index();
  if (r >= rows) return;
  const float* row = x + r * cols;
  float bv = row[0];
  int64_t bi = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    if (row[j] > bv) bv = row[j], bi = j;
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const float v = best_v[threadIdx.x + half];
      const int64_t i = best_i[threadIdx.x + half];
      if (v > best_v[threadIdx.x] || (v == best_v[threadIdx.x] && i < best_i[threadIdx.x]))
        best_v[threadIdx.x] = v, best_i[threadIdx.x] = i;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[r] = (int32_t)best_i[0];
}

// Whole rows by index; 4-byte words when every row and base allows it.
__global__ void gather_words_kernel(const uint32_t* x, const int32_t* rows, uint32_t* out, int64_t n_rows, int64_t row_words) {
  const int64_t n = n_rows * row_words;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / row_words, w = i % row_words;
    out[i] = x[(int64_t)rows[r] * row_words + w];
  }
}
__global__ void gather_bytes_kernel(const uint8_t* x, const int32_t* rows, uint8_t* out, int64_t n_rows, int64_t row_bytes) {
  const int64_t n = n_rows * row_bytes;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / row_bytes, b = i % row_bytes;
    out[i] = x[(int64_t)rows[r] * row_bytes + b];
  }
}

// One embedding row per block, in the table's dtype: plain elements, or
// 32-element units of a block type decoded as the matmul decodes them
// (kernels/cuda/dequant.h), each unit by one thread.
__global__ void embedding_kernel(const uint8_t* table, DType dtype, uint64_t row_bytes, const int32_t* ids, float* out,
                                 int64_t n_tokens, int64_t dim) {
  const int64_t t = row_index();
  if (t >= n_tokens) return;
  const uint8_t* row = table + (uint64_t)ids[t] * row_bytes;
  float* o = out + t * dim;
  if (is_plain_float(dtype)) {
    for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) o[j] = plain_at(dtype, row, j);
    return;
  }
  for (int64_t u = threadIdx.x; u < dim / kUnit; u += blockDim.x) {
    float v[kUnit];
    decode_unit(dtype, row, u, v);
    for (int i = 0; i < kUnit; ++i) o[u * kUnit + i] = v[i];
  }
}

}  // namespace

gpuError_t rms_norm(const RmsNormArgs& a, gpuStream_t s) {
  if (a.rows <= 0) return gpuSuccess;
  rms_norm_kernel<<<grid_rows(a.rows), kThreads, 0, s>>>(a.x, nullptr, nullptr, a.weight, a.out, a.rows, a.dim, a.p.eps);
  return gpuGetLastError();
}

gpuError_t head_rms_norm(const HeadRmsNormArgs& a, gpuStream_t s) {
  // Each head's head_dim values are a row of their own; a head is short (64-256), so a block of 64 threads.
  const int64_t rows = a.rows * a.heads;
  if (rows <= 0) return gpuSuccess;
  rms_norm_kernel<<<grid_rows(rows), 64, 0, s>>>(a.x, nullptr, nullptr, a.weight, a.out, rows, a.head_dim, a.p.eps);
  return gpuGetLastError();
}

gpuError_t add_rms_norm(const AddRmsNormArgs& a, gpuStream_t s) {
  if (a.rows <= 0) return gpuSuccess;
  rms_norm_kernel<<<grid_rows(a.rows), kThreads, 0, s>>>(a.a, a.b, a.sum, a.norm_weight, a.normed, a.rows, a.dim, a.p.eps);
  return gpuGetLastError();
}

gpuError_t softmax(const SoftmaxArgs& a, gpuStream_t s) {
  if (a.rows <= 0) return gpuSuccess;
  softmax_kernel<<<grid_rows(a.rows), kThreads, 0, s>>>(a.x, a.rows, a.cols);
  return gpuGetLastError();
}

gpuError_t argmax(const ArgmaxArgs& a, gpuStream_t s) {
  if (a.rows <= 0 || a.cols <= 0) return gpuSuccess;
  argmax_kernel<<<grid_rows(a.rows), kThreads, 0, s>>>(a.x, a.out, a.rows, a.cols);
  return gpuGetLastError();
}

gpuError_t gather_rows(const GatherRowsArgs& a, gpuStream_t s) {
  if (a.n_rows <= 0 || a.row_bytes <= 0) return gpuSuccess;
  const bool words = a.row_bytes % 4 == 0 && (uintptr_t)a.x % 4 == 0 && (uintptr_t)a.out % 4 == 0;
  if (words) {
    const int64_t row_words = a.row_bytes / 4;
    gather_words_kernel<<<grid_for(a.n_rows * row_words, kThreads), kThreads, 0, s>>>(
        reinterpret_cast<const uint32_t*>(a.x), a.rows, reinterpret_cast<uint32_t*>(a.out), a.n_rows, row_words);
  } else {
    gather_bytes_kernel<<<grid_for(a.n_rows * a.row_bytes, kThreads), kThreads, 0, s>>>(
        reinterpret_cast<const uint8_t*>(a.x), a.rows, reinterpret_cast<uint8_t*>(a.out), a.n_rows, a.row_bytes);
  }
  return gpuGetLastError();
}

bool embedding_reads(DType t) { return is_plain_float(t) || is_block_type(t); }

gpuError_t embedding(const EmbeddingArgs& a, gpuStream_t s) {
  if (a.n_tokens <= 0) return gpuSuccess;
  if (!embedding_reads(a.table_dtype) || (is_block_type(a.table_dtype) && a.dim % kUnit != 0)) return gpuErrorInvalidValue;
  embedding_kernel<<<grid_rows(a.n_tokens), kThreads, 0, s>>>(static_cast<const uint8_t*>(a.table), a.table_dtype,
                                                             bytes_for(a.table_dtype, a.dim), a.ids, a.out, a.n_tokens, a.dim);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
