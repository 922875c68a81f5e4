#pragma once
// The tensors a TransformerConfig's graph reads, whatever file they came
// from (GGUF, a Hugging Face folder): every one checked by name and shape,
// and any other tensor refused by name (a part the graph would leave out
// would make it compute another model).
#include <set>
#include <string>

#include "core/status.h"
#include "engine/models/model_weights.h"

namespace tessera {

// `ignored`: tensors the file may carry that the graph knowingly leaves out
// (gemma2's output.weight, which llama.cpp never reads).
Status check_model_tensors(const ModelWeights& m, const std::set<std::string>& ignored = {});

}  // namespace tessera
