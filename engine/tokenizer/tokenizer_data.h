#pragma once
// A vocabulary as files store it, before any algorithm runs on it.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

struct TokenizerData {
  std::string model = "llama";  // tokenizer.ggml.model: "llama" (SentencePiece BPE) or "gpt2"
  std::string pre;              // tokenizer.ggml.pre
  // Pieces as SentencePiece writes them in GGUF: the word boundary is U+2581
  // ("▁"). llama2.c's tokenizer.bin uses a plain space; its loader converts.
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<TokenType> types;
  std::vector<std::string> merges;  // byte-level BPE only
  int32_t bos_id = 1, eos_id = 2, unk_id = 0, pad_id = -1;
  bool add_bos = true, add_eos = false;
  bool add_space_prefix = true;
};

}  // namespace tessera
