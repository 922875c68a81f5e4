#pragma once
// A Hugging Face config.json as the runtime's TransformerConfig: model_type
// llama, mistral, qwen2, qwen3, gemma2 and phi3, each read with the fields
// and defaults transformers' config class of that name defines, and set to
// the TransformerConfig the GGUF loader sets for the file llama.cpp's
// convert_hf_to_gguf.py would write from the same folder (the one graph
// then computes both alike). What neither can express is refused in one
// line naming the key.
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/models/hf_tensor_names.h"
#include "engine/models/transformer_config.h"

namespace tessera {

struct HfConfig {
  const HfArchitecture* arch = nullptr;
  TransformerConfig config;
  // llama3 RoPE scaling: the factors llama.cpp's converter writes as
  // rope_freqs.weight (config.rope_freq_factors is set); empty otherwise.
  std::vector<float> rope_freq_factors;
  std::vector<std::string> notes;  // fields read with a consequence worth printing (phi3's window not applied)
};

// `text` is the file's content; `path` names it in messages.
Expected<HfConfig> parse_hf_config(std::string_view text, const std::string& path);
Expected<HfConfig> read_hf_config(const std::string& path);

}  // namespace tessera
