// kv_append: each token's K and V rows stored at its slot of the pools,
// rounded to the pools' type (kernels/reference/kv_cache.cpp). f32, f16 and
// bf16: one grid-stride pass over the elements of the step's rows, so
// consecutive threads copy consecutive floats of a row; q8_0 and fp8_e4m3:
// one over their 32-element blocks, each quantized whole by a thread.
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/kv_element.h"
#include "kernels/cuda/kv_rows.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    append_rows_kernel(const float* k, void* k_pool, const float* v, void* v_pool, DType kv_dtype,
                       const int32_t* slot_mapping, int64_t n_tokens, int64_t row, int64_t num_slots) {
  const int64_t n = n_tokens * row;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t t = i / row, e = i % row;
    const int64_t slot = slot_mapping[t];
    if (slot < 0 || slot >= num_slots) continue;  // outside the pool: skipped, as the Vulkan kernel does
    if (k) store_kv(k_pool, kv_dtype, slot * row + e, k[i]);
    if (v) store_kv(v_pool, kv_dtype, slot * row + e, v[i]);
  }
}

// The 8-bit pools: a thread per 32-element block of a token's row, which it
// quantizes whole (a head's row is whole blocks: head_dim % 32 == 0).
__global__ void __launch_bounds__(kThreads)
    append_blocks_kernel(const float* k, void* k_pool, const float* v, void* v_pool, DType kv_dtype,
                         const int32_t* slot_mapping, int64_t n_tokens, int64_t row, int64_t num_slots) {
  const int64_t per_row = row / kKvBlock, n = n_tokens * per_row;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t t = i / per_row, e = (i % per_row) * kKvBlock;
    const int64_t slot = slot_mapping[t];
    if (slot < 0 || slot >= num_slots) continue;
    if (k) store_kv_block(k_pool, kv_dtype, slot * row + e, k + t * row + e);
    if (v) store_kv_block(v_pool, kv_dtype, slot * row + e, v + t * row + e);
  }
}

}  // namespace

gpuError_t append_kv_rows(const float* k, void* k_pool, const float* v, void* v_pool, DType kv_dtype,
                          const int32_t* slot_mapping, int64_t n_tokens, int64_t row, int64_t num_slots, gpuStream_t s) {
  if (n_tokens < 0 || row < 0 || num_slots < 0) return gpuErrorInvalidValue;
  if (!k_pool) k = nullptr;
  if (!v_pool) v = nullptr;
  if (n_tokens == 0 || row == 0 || num_slots == 0 || (!k && !v)) return gpuSuccess;
  if (is_kv_block_type(kv_dtype)) {
    if (row % kKvBlock != 0) return gpuErrorInvalidValue;
    append_blocks_kernel<<<grid_for(n_tokens * (row / kKvBlock), kThreads), kThreads, 0, s>>>(
        k, k_pool, v, v_pool, kv_dtype, slot_mapping, n_tokens, row, num_slots);
    return gpuGetLastError();
  }
  append_rows_kernel<<<grid_for(n_tokens * row, kThreads), kThreads, 0, s>>>(k, k_pool, v, v_pool, kv_dtype,
                                                                             slot_mapping, n_tokens, row, num_slots);
  return gpuGetLastError();
}

gpuError_t kv_append(const KvAppendArgs& a, gpuStream_t s) {
  if (a.n_tokens == 0) return gpuSuccess;
  if (a.p.n_kv_heads < 0 || a.p.head_dim < 0) return gpuErrorInvalidValue;
  const int64_t row = (int64_t)a.p.n_kv_heads * a.p.head_dim;
  if (a.kv_dtype != DType::f32 && a.kv_dtype != DType::f16 && a.kv_dtype != DType::bf16 && !is_kv_block_type(a.kv_dtype))
    return gpuErrorInvalidValue;
  if (is_kv_block_type(a.kv_dtype) && a.p.head_dim % kKvBlock != 0) return gpuErrorInvalidValue;
  return append_kv_rows(a.k, a.k_pool, a.v, a.v_pool, a.kv_dtype, a.slot_mapping, a.n_tokens, row, a.num_slots, s);
}

}  // namespace tessera::gpu::kernels
