#pragma once
// A loaded model: its config and every weight tensor by its GGUF name
// (token_embd.weight, blk.N.attn_norm.weight, blk.N.attn_q.weight,
// blk.N.attn_k.weight, blk.N.attn_v.weight, blk.N.attn_output.weight,
// blk.N.ffn_norm.weight, blk.N.ffn_gate.weight, blk.N.ffn_up.weight,
// blk.N.ffn_down.weight, output_norm.weight, output.weight), whatever the
// file format. Shapes are outermost first: attn_q is [n_heads*head_dim, dim].
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "engine/models/transformer_config.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

struct WeightTensor {
  std::string name;
  TensorDesc desc;  // contiguous
  std::span<const std::byte> data;
};

struct ModelWeights {
  std::string source;  // the file it came from, for messages
  std::string format;  // "llama2c", "gguf", "synthetic"
  TransformerConfig config;
  std::vector<WeightTensor> tensors;
  // Extra metadata (GGUF keys not consumed), printable by `tessera info`.
  std::map<std::string, std::string> metadata;
  // The model's chat template (GGUF tokenizer.chat_template), whole; empty when none.
  std::string chat_template;
  // The vocabulary when the file carries one (GGUF).
  std::optional<TokenizerData> tokenizer;
  // Owns what `data` spans point into: an mmap, or bytes made at load.
  std::shared_ptr<const void> storage;

  const WeightTensor* find(const std::string& name) const;
  // The tensor, checked to exist with exactly this shape.
  Expected<const WeightTensor*> require(const std::string& name, const Shape& shape) const;
  uint64_t total_bytes() const;
};

}  // namespace tessera
