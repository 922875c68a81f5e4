#pragma once
// Writes a loaded llama model (any source format) as a GGUF file that
// load_gguf_model reads back to the same config and tensors.
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "engine/models/model_weights.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

// 2-D tensors (matmul weights, token_embd) are written in `type` (f32, f16,
// q8_0 or q4_0); 1-D tensors (norms) in f32. A tensor whose rows are not a
// whole number of `type`'s blocks is written in f16 instead, and a line
// saying which and why is appended to *notes (may be null). Q/K rows of a
// half-split RoPE model are permuted to GGUF's interleaved order (noted).
// Tied embeddings: no output.weight is written. `tok` may be null.
Status write_model_gguf(const ModelWeights& m, const TokenizerData* tok, DType type, const std::string& out_path,
                        std::vector<std::string>* notes);

}  // namespace tessera
