#pragma once
// A llama-shaped model with random weights, built in memory in about a
// second, for `tessera bench` and for tests that need real sizes without a
// real file. Weights are made directly in their storage type (random quant
// codes under one fixed f16 scale per tensor), so building never holds a
// float copy of the model.
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/parallel.h"
#include "core/status.h"
#include "engine/models/transformer_config.h"
#include "engine/models/model_weights.h"

namespace tessera {

struct SyntheticSpec {
  TransformerConfig config;
  DType weight_type = DType::q8_0;  // every matrix, token_embd included; norms are f32
  uint64_t seed = 1;
};

// The bench shape: a llama of dim 2048, hidden 8192, 32 heads over 8 KV
// heads (head_dim 64), vocab 32000, context 2048, rope theta 10000, eps 1e-5,
// untied output, so that its weights dwarf any last-level cache:
//   24 layers, 1,590,790,144 params: q8_0 1,690,509,312 bytes (1.69 GB),
//     f16/bf16 3,181,580,288 bytes, f32 6,363,160,576 bytes;
//   types under one byte per weight (q4_0, q4_K: 0.5625) get 48 layers,
//     3,050,506,240 params, 1,716,592,640 bytes (1.72 GB), instead of the
//     24-layer 895,164,416 bytes, so every bench model is >= 1.5 GiB.
SyntheticSpec default_bench_spec(DType weight_type = DType::q8_0);

// The bench model's weight type by name: q8_0, q4_0, f16 or f32; otherwise
// invalid_argument naming `what` (the flag or path it came from).
Expected<DType> synthetic_weight_type(const std::string& name, const std::string& what);

// Bytes make_synthetic_llama will allocate for `spec` (tensor starts are
// 64-byte aligned); 0 when the spec is invalid.
uint64_t synthetic_model_bytes(const SyntheticSpec& spec);

// Every tensor of model_weights.h's naming scheme (output.weight only when
// the config is untied). Norm weights are 1.0 (f32); a matrix [N, K] is
// uniform, zero-mean, std ≈ 1/sqrt(K), so activations stay O(1) through the
// layers. Deterministic for a seed, whatever pf's thread count. All bytes
// live in one allocation owned by `storage`; format "synthetic", source
// "synthetic:dim=...,hidden=...,...". Supports f32, f16, bf16, q8_0, q4_0 and
// q4_K; invalid_argument for shapes the type's blocks do not divide.
Expected<ModelWeights> make_synthetic_llama(const SyntheticSpec& spec, ParallelFor& pf);

}  // namespace tessera
