#pragma once
// The tokenizer.ggml.* keys of a GGUF file as TokenizerData, with
// llama.cpp's defaults for a "llama" (SentencePiece) vocabulary.
#include <optional>
#include <set>
#include <string>

#include "core/status.h"
#include "engine/formats/gguf.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

// nullopt when the file has no tokenizer.ggml.tokens. Adds every key it
// reads to *consumed. Lengths of tokens, scores and token_type must agree
// and the special ids must name tokens.
Expected<std::optional<TokenizerData>> read_gguf_tokenizer(const GgufFile& file, std::set<std::string>* consumed);

}  // namespace tessera
