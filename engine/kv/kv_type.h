#pragma once
// The KV pools' element type (--kv-type): f32, f16, bf16, q8_0 or fp8_e4m3,
// or "auto" for the model's default. K and V are rounded to it as they are
// appended and read back as f32 by attention, so f16 and bf16 halve the bytes
// a decode step reads from the cache and double the blocks a memory budget
// buys; q8_0 and fp8_e4m3 (34 bytes per 32 elements of a head, an f16 scale
// per block: docs/ir.md, "KV pools") take 53% of f16's.
#include <string_view>

#include "core/dtype.h"
#include "core/hal/kernel_table.h"
#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

// "auto", "f32", "f16", "bf16", "q8_0" or "fp8_e4m3"; anything else, or an
// 8-bit type for a model whose head_dim is not a multiple of 32, is refused
// in one line naming --kv-type. "auto" is default_kv_dtype(w), or f32 where `target` (when
// given) has no kv_append or paged_attention over that type: a default, so
// it follows the device. A type asked for by name is never changed (a
// backend that cannot run it refuses or places those nodes visibly).
Expected<DType> resolve_kv_type(std::string_view kv_type, const ModelWeights& w, const KernelTable* target = nullptr);

// auto's answer: f32 for a model whose matrices are all f32 (the llama2.c
// checkpoints and f32 GGUFs, whose tests compare with f32 references), f16
// for every other (f16, bf16 or quantized weights, as llama.cpp's default).
DType default_kv_dtype(const ModelWeights& w);

}  // namespace tessera
