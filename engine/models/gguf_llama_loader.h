#pragma once
// GGUF files of the llama architecture: config from the llama.* keys, every
// tensor checked by name and shape, the vocabulary from tokenizer.ggml.*.
// Tensors are zero-copy spans into the mmapped file.
#include <string>

#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

Expected<ModelWeights> load_gguf_llama(const std::string& path);

}  // namespace tessera
