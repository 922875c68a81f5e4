#pragma once
// A model file and its tokenizer without a device: what it holds (`tessera
// info`), its tokenizer alone (`tessera tokenize`), and conversion to GGUF
// (`tessera convert`).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/export.h"
#include "tessera/model_config.h"
#include "tessera/status.h"

namespace tessera {

struct TensorInfo {
  std::string name;            // GGUF naming: "blk.7.attn_q.weight"
  std::vector<int64_t> shape;  // outermost first: attn_q is [heads * head_dim, embedding_dim]
  std::string dtype;           // "f32", "f16", "q8_0", "q4_0", ...
  uint64_t elements = 0;
  uint64_t bytes = 0;          // as stored
};

struct ModelFileInfo {
  std::string path;
  std::string format;     // "gguf", "llama2c" or "hf" (a Hugging Face folder)
  std::string container;  // "GGUF v3, alignment 32, 24 metadata keys", "llama2.c checkpoint"
  ModelConfig config;
  std::vector<TensorInfo> tensors;  // in the file's order
  // Metadata keys Tessera does not interpret, with their values as text, sorted by key.
  std::vector<std::pair<std::string, std::string>> metadata;
  bool has_tokenizer = false;  // the file carries its vocabulary (GGUF)
};

// Reads and validates the file (as Model::open does) but opens no device.
TESSERA_API Expected<ModelFileInfo> inspect_model(const std::string& path);

struct TokenizerOptions {
  std::string model_path;      // the model whose vocabulary to use, and whose vocab_size bounds a tokenizer file
  std::string tokenizer_path;  // Hugging Face tokenizer.json or llama2.c tokenizer.bin; empty: the model's own
};

struct SpecialToken {
  int32_t id = -1;   // -1: the vocabulary has none
  std::string text;  // the piece as the vocabulary stores it
};

struct TokenizerInfo {
  std::string source;       // the file the vocabulary came from
  std::string description;  // the algorithm and pre-tokenizer, e.g. "SentencePiece BPE"
  int32_t vocab_size = 0;
  SpecialToken bos, eos, unk, pad;
  bool add_bos = false, add_eos = false;  // what encoding adds unless told otherwise
  bool byte_level = false;                // byte-level BPE (GPT-2 style): no space prefix rule
  bool add_space_prefix = false;          // SentencePiece-style vocabularies: a space is put before the text
  // How many tokens have each type ("normal", "control", "byte", ...), in GGUF's type order.
  std::vector<std::pair<std::string, int32_t>> token_types;
};

struct TokenizeOptions {
  bool bos = true;             // BOS where the vocabulary asks for it; false: never
  bool parse_special = false;  // text spelling a control token (</s>, <|eot_id|>) becomes that token
};

// A model's tokenizer, or a tokenizer file, on its own.
class TESSERA_API TextTokenizer {
 public:
  // Needs a model, a tokenizer file, or both; a tokenizer file with more
  // tokens than the model's vocab_size is refused.
  static Expected<std::unique_ptr<TextTokenizer>> open(const TokenizerOptions& options);
  ~TextTokenizer();
  TextTokenizer(const TextTokenizer&) = delete;
  TextTokenizer& operator=(const TextTokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, const TokenizeOptions& options = {}) const;
  // The bytes token `id` stands for (special tokens as their text); empty outside the vocabulary.
  std::string token_bytes(int32_t id) const;
  int32_t vocab_size() const;
  TokenizerInfo info() const;

  struct Impl;

 private:
  explicit TextTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ConvertOptions {
  std::string input;           // llama2.c .bin, GGUF, or a Hugging Face folder (config.json, *.safetensors)
  std::string tokenizer_path;  // a tokenizer to embed instead of the input's own; may be empty
  std::string output;          // the GGUF file to write
  // A llama.cpp file type, whose per-tensor mix llama-quantize would choose
  // (q4_K_M, q5_K_M, q4_K_S, q5_K_S, q6_K, q8_0, q4_0, q4_1, q5_0, q5_1, f16,
  // bf16, f32), or any weight type Tessera can write (every 2-D weight in it).
  std::string type = "f32";
  bool pure = false;           // every 2-D weight in the file type's base type (llama-quantize --pure)
};

// Writes options.output; what was changed on the way (a tensor kept at a
// wider type than asked, ...) is appended to `notes`, one line each.
TESSERA_API Status convert_model(const ConvertOptions& options, std::vector<std::string>* notes);

}  // namespace tessera
