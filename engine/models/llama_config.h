#pragma once
// Kept for code written before the other architectures: LlamaConfig is
// TransformerConfig (engine/models/transformer_config.h).
#include "engine/models/transformer_config.h"
