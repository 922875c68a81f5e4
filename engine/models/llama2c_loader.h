#pragma once
// llama2.c checkpoints (run.c's format): seven int32 header fields, then f32
// weights in run.c's order. The file is mmapped and the tensors are
// zero-copy spans into it, named as GGUF names them (model_weights.h).
#include <string>

#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

Expected<ModelWeights> load_llama2c(const std::string& path);

}  // namespace tessera
