#pragma once
// A Hugging Face config.json as the runtime's TransformerConfig. model_type llama
// and mistral are read today (the fields transformers' LlamaConfig and
// MistralConfig define); other model_types with a tensor-name table
// (hf_tensor_names.h) are refused until TransformerConfig can describe them.
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/models/hf_tensor_names.h"
#include "engine/models/transformer_config.h"

namespace tessera {

struct HfConfig {
  const HfArchitecture* arch = nullptr;
  TransformerConfig llama;
  std::vector<std::string> notes;  // fields read with a consequence worth printing (a sliding window capped the context)
};

// `text` is the file's content; `path` names it in messages.
Expected<HfConfig> parse_hf_config(std::string_view text, const std::string& path);
Expected<HfConfig> read_hf_config(const std::string& path);

}  // namespace tessera
