#pragma once
// Every architecture as one graph (engine/models/transformer_config.h): one
// step over T tokens of any number of sequences, K/V appended to paged
// per-layer pools, logits for R chosen rows. The architectures differ only
// in which ops the builder emits (biases, per-head norms, post-norms,
// gating, soft-caps, sliding windows, packed projections); no other code
// runs per architecture.
#include "core/status.h"
#include "engine/models/model_weights.h"
#include "graph/ir.h"

namespace tessera {

struct KvLayout {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  DType dtype = DType::f32;  // the pools' element type: f32, f16, bf16, q8_0 or fp8_e4m3
  int64_t num_slots() const { return (int64_t)num_blocks * block_size; }
};

struct ModelGraphOptions {
  // Also return each logit row's greedy token (argmax, on the device), as the
  // graph's second output, so a step can hand back R ids instead of R x vocab floats.
  bool sample_on_device = false;
};

// Every weight is taken from `w` with its shape checked against the config;
// a missing or misshapen tensor is an error naming it.
Expected<graph::Graph> build_model_graph(const ModelWeights& w, const KvLayout& kv, const ModelGraphOptions& o = {});

}  // namespace tessera
