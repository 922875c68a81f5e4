#pragma once
// A model's shape as a program sees it, whatever the architecture and the
// file format spelled it (GGUF keys, a llama2.c header).
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

struct ModelConfig {
  std::string architecture;     // general.architecture: "llama", "qwen2", "qwen3", "gemma2" or "phi3"
  int32_t vocab_size = 0;
  int32_t context_length = 0;   // positions the model was trained for
  int32_t embedding_dim = 0;    // the residual stream's width
  int32_t ffn_dim = 0;          // the feed-forward block's hidden width
  int32_t layers = 0;
  int32_t heads = 0;            // query heads
  int32_t kv_heads = 0;         // key/value heads (fewer than heads: grouped-query attention)
  int32_t head_dim = 0;
  int32_t rope_dims = 0;        // rotated dimensions per head (head_dim unless the file says fewer)
  float rope_theta = 0;         // RoPE frequency base
  std::string rope_pairs;       // which dimensions RoPE rotates together: "interleaved" or "half-split"
  float norm_eps = 0;           // the normalization's epsilon (RMSNorm for llama)
  bool tied_embeddings = false; // the output projection is the token embedding
  // What the architecture adds to or changes in llama's block, one phrase
  // each (e.g. "Q/K/V biases", "sliding window 64 on layers 0, 2, 4, ..."); empty for llama 2.
  std::vector<std::string> features;
};

}  // namespace tessera
