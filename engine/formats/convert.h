#pragma once
// Writes a loaded model of any architecture Tessera builds (llama, qwen2,
// qwen3, gemma2, phi3; any source format) as a GGUF file that
// load_gguf_model reads back to the same config and tensors, with the
// {arch}.* keys llama.cpp's converter writes (gguf_arch_keys.h).
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "engine/formats/quant_mix.h"
#include "engine/models/model_weights.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

// Whether `type` can be written: plain float types, and the quantized types
// core/quant has a quantizer for (quantize_row answers).
bool can_write_weight_type(DType type);
// Those types' names, comma-separated, for messages.
std::string writable_weight_types();

// 2-D tensors (matmul weights, token_embd) are written in `type` (any type
// can_write_weight_type accepts); 1-D tensors (norms) in f32. A tensor whose rows are not a
// whole number of `type`'s blocks is written in f16 instead, and a line
// saying which and why is appended to *notes (may be null). Q/K rows of a
// half-split RoPE llama model are permuted to GGUF's interleaved order
// (noted); the other architectures keep GGUF's half-split order as they are.
// The file written is loaded back and must give the model's config, else
// it is removed and the field that differs named.
// Tied embeddings: no output.weight is written. `tok` may be null; the
// model's chat template, when it has one, is written as tokenizer.chat_template.
Status write_model_gguf(const ModelWeights& m, const TokenizerData* tok, DType type, const std::string& out_path,
                        std::vector<std::string>* notes);
// The same with llama.cpp's per-tensor mix for a file type (q4_K_M: q4_K,
// with q6_K for the classifier and some layers' attn_v and ffn_down;
// engine/formats/quant_mix.h), or every 2-D weight in its base type when
// mix.pure. general.file_type is the file type's llama_ftype.
Status write_model_gguf(const ModelWeights& m, const TokenizerData* tok, const QuantFileType& ft, bool pure,
                        const std::string& out_path, std::vector<std::string>* notes);

}  // namespace tessera
