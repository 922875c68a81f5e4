#pragma once
// Opens a model of any supported format: a Hugging Face folder (a directory
// with config.json), GGUF when the file starts with the GGUF magic, else a
// llama2.c checkpoint.
#include <string>

#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

Expected<ModelWeights> load_model(const std::string& path);

}  // namespace tessera
