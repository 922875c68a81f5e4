#pragma once
// GGUF files of every architecture Tessera builds (general.architecture:
// llama, qwen2, qwen3, gemma2, phi3): the config from the {arch}.* keys as
// llama.cpp reads them, every tensor checked by name and shape (and any the
// architecture does not read refused), the vocabulary from tokenizer.ggml.*.
// Tensors are zero-copy spans into the mmapped file.
#include <string>

#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

Expected<ModelWeights> load_gguf_model(const std::string& path);

}  // namespace tessera
