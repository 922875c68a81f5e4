#pragma once
// The llama architecture's hyper-parameters, however the file spelled them.
#include <cstdint>
#include <string>

#include "core/ops.h"
#include "core/status.h"

namespace tessera {

struct LlamaConfig {
  int32_t dim = 0;          // llama.embedding_length
  int32_t hidden_dim = 0;   // llama.feed_forward_length
  int32_t n_layers = 0;     // llama.block_count
  int32_t n_heads = 0;      // llama.attention.head_count
  int32_t n_kv_heads = 0;   // llama.attention.head_count_kv
  int32_t vocab_size = 0;
  int32_t context_length = 0;  // llama.context_length (llama2.c: seq_len)
  int32_t rope_dims = 0;       // llama.rope.dimension_count; head_dim when absent
  float rope_theta = 10000.0f; // llama.rope.freq_base
  float rms_eps = 1e-5f;       // llama.attention.layer_norm_rms_epsilon
  RopeLayout rope_layout = RopeLayout::interleaved;
  bool tied_embeddings = false;  // no output.weight: the classifier is token_embd

  int32_t head_dim() const { return n_heads ? dim / n_heads : 0; }
  int32_t kv_dim() const { return head_dim() * n_kv_heads; }
  // Checks the relations the graph relies on; `source` names the file.
  Status validate(const std::string& source) const;
};

}  // namespace tessera
