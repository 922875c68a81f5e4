#pragma once
// A Hugging Face model folder: config.json (hf_config.h), the weights in
// model.safetensors or in shards listed by model.safetensors.index.json
// (F32, F16 or BF16), renamed to GGUF names (hf_tensor_names.h), and, when
// present, tokenizer.json with the chat template of tokenizer_config.json
// (or chat_template.jinja). Matmul weights stay zero-copy spans into the
// mmapped shards; 1-D tensors (norms) are widened to f32 at load, as GGUF
// files keep them. Q/K rows stay in HF's half-split RoPE order and the config
// says so (rope_layout half_split); `tessera convert` permutes them for GGUF.
#include <string>

#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

Expected<ModelWeights> load_hf_model(const std::string& dir);

}  // namespace tessera
