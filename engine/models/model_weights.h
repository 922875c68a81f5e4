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

#include "core/mapped_file.h"
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
  // The file maps among them (GGUF, safetensors shards, llama2.c), for
  // release_copied.
  std::vector<std::shared_ptr<const MappedFile>> mappings;

  // Drops the resident pages under a tensor's bytes that a reader has
  // copied (the runner's reordered and packed weights), where they lie in
  // a file map: they refault from the file if read again, so this is safe
  // whoever reads them later, and the process holds one copy of a weight
  // rather than two. Bytes made at load are left alone.
  void release_copied(std::span<const std::byte> bytes) const;

  const WeightTensor* find(const std::string& name) const;
  // The tensor, checked to exist with exactly this shape.
  Expected<const WeightTensor*> require(const std::string& name, const Shape& shape) const;
  uint64_t total_bytes() const;
};

}  // namespace tessera
