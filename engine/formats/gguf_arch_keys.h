#pragma once
// A TransformerConfig as the general.architecture and {arch}.* keys of a
// GGUF file: the keys llama.cpp's convert_hf_to_gguf.py writes for that
// architecture, spelled as load_gguf_model reads them, so that the file
// reads back to the same config.
#include <string>

#include "core/status.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/transformer_config.h"

namespace tessera {

// Refuses, naming the field, a config whose switches the architecture's keys
// cannot state (gemma2 without soft-caps, or with a query_pre_attn_scalar
// other than the one llama.cpp derives). `source` names the model in messages.
Status write_arch_keys(GgufWriter& w, const TransformerConfig& c, const std::string& source);

}  // namespace tessera
