#pragma once
// A Hugging Face folder: config.json (hf_config.h: model_type llama, mistral,
// qwen2, qwen3, gemma2 or phi3), the weights in model.safetensors or in
// shards listed by model.safetensors.index.json (F32, F16 or BF16), renamed
// to GGUF names (hf_tensor_names.h), and, when present, tokenizer.json with
// the chat template of tokenizer_config.json (or chat_template.jinja).
// Matmul weights stay zero-copy spans into the mmapped shards; 1-D tensors
// (norms, biases) are widened to f32 at load, as GGUF files keep them, with
// Gemma's +1 added to its norms. Q/K rows stay in HF's half-split RoPE order
// and the config says so (rope_layout half_split): GGUF keeps that order for
// every architecture but llama, whose rows `tessera convert` permutes.
#include <string>

#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

Expected<ModelWeights> load_hf_model(const std::string& dir);

}  // namespace tessera
