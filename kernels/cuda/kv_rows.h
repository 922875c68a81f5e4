#pragma once
// The row copy into the KV pools behind kv_append (kernels/cuda/kv_append.cu),
// shared with rope_kv_append (kernels/cuda/rope.cu), which writes the rotated
// K rows itself and appends only V through it.
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu::kernels {

// For every token t with 0 <= slot_mapping[t] < num_slots: pool rows
// k_pool[slot] = k[t] and v_pool[slot] = v[t], rows of `row` floats stored
// as kv_dtype (f32, f16 or bf16, rounded to nearest even; q8_0 or fp8_e4m3
// a 32-element block at a time, row a multiple of 32). Either
// pair may be null (k and k_pool, or v and v_pool) to copy only the other.
// A slot outside the pool is skipped (the host refuses such steps; this only
// keeps bad metadata from writing outside the pools). Queues one kernel.
gpuError_t append_kv_rows(const float* k, void* k_pool, const float* v, void* v_pool, DType kv_dtype,
                          const int32_t* slot_mapping, int64_t n_tokens, int64_t row, int64_t num_slots, gpuStream_t s);

}  // namespace tessera::gpu::kernels
