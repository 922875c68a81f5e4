#pragma once
// A Hugging Face tokenizer.json as TokenizerData, the way llama.cpp's
// converter (convert_hf_to_gguf.py) would put it into a GGUF:
//   * model.type BPE with a ByteLevel pre-tokenizer → "gpt2": vocab and
//     added_tokens as tokens, model.merges as "left right", the Split regex
//     recognised as the gpt-2 or llama-bpe pre-tokenizer;
//   * model.type BPE with SentencePiece's ▁ (a Replace " "→"▁" normalizer or
//     a Metaspace pre-tokenizer) → "llama": scores derived from the merge
//     order (a token's score is minus the rank of the first merge making it),
//     <0xNN> pieces typed byte when model.byte_fallback, the space prefix from
//     Prepend "▁" / Metaspace.
// Added tokens are control when special, else user-defined; model.unk_token
// is unknown. BOS/EOS/UNK/PAD and add_bos/add_eos come from a
// tokenizer_config.json beside the file when there is one, else from the
// TemplateProcessing post-processor, else from the usual piece names
// (<s>, <|begin_of_text|>, </s>, <|end_of_text|>, <|endoftext|>), else
// llama.cpp's defaults for the model.
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

Expected<TokenizerData> read_hf_tokenizer_json(const std::string& path);
// The same with the file's content given (`path` still names it, and its
// folder is where tokenizer_config.json is looked for); nullopt reads `path`.
Expected<TokenizerData> read_hf_tokenizer_json_text(const std::string& path, std::optional<std::string_view> text);

}  // namespace tessera
