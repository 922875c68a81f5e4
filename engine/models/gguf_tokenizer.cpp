#include "engine/models/gguf_tokenizer.h"

namespace tessera {

namespace {
constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";

// A special token id: absent keeps the default; present must name a token.
Status read_id(const GgufFile& f, const char* key, size_t n_tokens, int32_t* id, std::set<std::string>* consumed) {
  if (!f.has(key)) return Status::ok();
  consumed->insert(key);
  TS_ASSIGN_OR_RETURN(const uint64_t v, f.get_uint(key));
  if (v >= n_tokens)
    return f.key_error(key, "is " + std::to_string(v) + "; expected a token id below " + std::to_string(n_tokens) +
                                " (the length of " + kTokens + ")");
  *id = (int32_t)v;
  return Status::ok();
}

Status read_flag(const GgufFile& f, const char* key, bool* flag, std::set<std::string>* consumed) {
  if (!f.has(key)) return Status::ok();
  consumed->insert(key);
  TS_ASSIGN_OR_RETURN(*flag, f.get_bool(key));
  return Status::ok();
}

Status length_mismatch(const GgufFile& f, const char* key, size_t n, size_t n_tokens) {
  return f.key_error(key, "has " + std::to_string(n) + " elements; expected " + std::to_string(n_tokens) +
                              " (the length of " + kTokens + ")");
}
}  // namespace

Expected<std::optional<TokenizerData>> read_gguf_tokenizer(const GgufFile& f, std::set<std::string>* consumed) {
  if (!f.has(kTokens)) return std::optional<TokenizerData>();
  TokenizerData t;
  consumed->insert(kTokens);
  TS_ASSIGN_OR_RETURN(t.tokens, f.get_string_array(kTokens));
  const size_t n = t.tokens.size();
  if (n == 0) return f.key_error(kTokens, "is empty; expected at least one token");
  if (f.has(kModel)) {
    consumed->insert(kModel);
    TS_ASSIGN_OR_RETURN(t.model, f.get_string(kModel));
  }
  if (f.has(kPre)) {
    consumed->insert(kPre);
    TS_ASSIGN_OR_RETURN(t.pre, f.get_string(kPre));
  }
  const bool byte_level = t.model == "gpt2";
  if (f.has(kScores)) {
    consumed->insert(kScores);
    TS_ASSIGN_OR_RETURN(t.scores, f.get_f32_array(kScores));
    if (t.scores.size() != n) return length_mismatch(f, kScores, t.scores.size(), n);
  } else if (byte_level) {
    t.scores.assign(n, 0.0f);  // byte-level BPE merges by rank; llama.cpp's converter writes no scores
  } else {
    // llama.cpp would read zeros and merge blindly; refuse instead.
    return f.key_error(kScores, "is missing; a '" + t.model + "' (SentencePiece) vocabulary needs one score per token");
  }
  if (f.has(kTypes)) {
    consumed->insert(kTypes);
    TS_ASSIGN_OR_RETURN(const std::vector<int32_t> types, f.get_i32_array(kTypes));
    if (types.size() != n) return length_mismatch(f, kTypes, types.size(), n);
    t.types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > (int32_t)TokenType::byte)
        return f.key_error(kTypes, "element " + std::to_string(i) + " is " + std::to_string(types[i]) +
                                       "; expected a token type 0..6");
      t.types.push_back((TokenType)types[i]);
    }
  } else {
    t.types.assign(n, TokenType::normal);
  }
  if (f.has(kMerges)) {
    consumed->insert(kMerges);
    TS_ASSIGN_OR_RETURN(t.merges, f.get_string_array(kMerges));
  } else if (byte_level) {
    return f.key_error(kMerges, "is missing; a 'gpt2' (byte-level BPE) vocabulary needs its merges");
  }
  if (byte_level) {
    // llama.cpp's defaults for a BPE vocabulary: bos = eos = 11, no unk, no
    // space prefix; BOS added only for llama-bpe.
    t.bos_id = t.eos_id = 11;
    t.unk_id = -1;
    t.add_space_prefix = false;
    t.add_bos = t.pre == "llama-bpe" || t.pre == "llama3" || t.pre == "llama-v3" || t.pre == "falcon3";
  }
  // llama.cpp's defaults for a SentencePiece vocabulary: bos 1, eos 2, unk 0.
  TS_TRY(read_id(f, "tokenizer.ggml.bos_token_id", n, &t.bos_id, consumed));
  TS_TRY(read_id(f, "tokenizer.ggml.eos_token_id", n, &t.eos_id, consumed));
  TS_TRY(read_id(f, "tokenizer.ggml.unknown_token_id", n, &t.unk_id, consumed));
  TS_TRY(read_id(f, "tokenizer.ggml.padding_token_id", n, &t.pad_id, consumed));
  TS_TRY(read_flag(f, "tokenizer.ggml.add_bos_token", &t.add_bos, consumed));
  TS_TRY(read_flag(f, "tokenizer.ggml.add_eos_token", &t.add_eos, consumed));
  TS_TRY(read_flag(f, "tokenizer.ggml.add_space_prefix", &t.add_space_prefix, consumed));
  for (const auto& [name, id] : {std::pair<const char*, int32_t>{"bos", t.bos_id}, {"eos", t.eos_id}, {"unk", t.unk_id}}) {
    if (byte_level && id == -1) continue;
    if (id < 0 || (size_t)id >= n)
      return f.key_error(kTokens, "has " + std::to_string(n) + " tokens; the default " + name + " id " +
                                      std::to_string(id) + " is not among them");
  }
  return std::optional<TokenizerData>(std::move(t));
}

}  // namespace tessera
