#include "engine/api/model_impl.h"

namespace tessera {

ModelConfig to_model_config(const LlamaConfig& c) {
  ModelConfig m;
  m.architecture = "llama";
  m.vocab_size = c.vocab_size;
  m.context_length = c.context_length;
  m.embedding_dim = c.dim;
  m.ffn_dim = c.hidden_dim;
  m.layers = c.n_layers;
  m.heads = c.n_heads;
  m.kv_heads = c.n_kv_heads;
  m.head_dim = c.head_dim();
  m.rope_dims = c.rope_dims;
  m.rope_theta = c.rope_theta;
  m.rope_pairs = c.rope_layout == RopeLayout::interleaved ? "interleaved" : "half-split";
  m.norm_eps = c.rms_eps;
  m.tied_embeddings = c.tied_embeddings;
  return m;
}

}  // namespace tessera
