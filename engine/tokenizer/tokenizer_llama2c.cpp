// llama2.c's tokenizer.bin: int32 max_token_length, then per token an f32
// score, an int32 length and the bytes. Pieces spell spaces as ' '; they are
// stored in TokenizerData with GGUF's U+2581.
#include <cstring>

#include "core/mapped_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera {

namespace {
std::string spaces_to_marks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == ' ') out += "\xe2\x96\x81";
    else out += c;
  }
  return out;
}

bool is_byte_piece(std::string_view p) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
  return p.size() == 6 && p.substr(0, 3) == "<0x" && hex(p[3]) && hex(p[4]) && p[5] == '>';
}
}  // namespace

Expected<Tokenizer> Tokenizer::load_llama2c(const std::string& path, int32_t vocab_size) {
  if (vocab_size <= 0)
    return invalid_argument(path + ": vocab_size " + std::to_string(vocab_size) + "; expected a positive count");
  TS_ASSIGN_OR_RETURN(const MappedFile file, MappedFile::open(path));
  const std::byte* b = file.data();
  const uint64_t size = file.size();
  if (size < 4)
    return invalid_argument(path + ": file is " + std::to_string(size) +
                            " bytes; the tokenizer.bin header (int32 max_token_length) needs 4");
  int32_t max_len = 0;
  std::memcpy(&max_len, b, 4);
  if (max_len <= 0)
    return invalid_argument(path + ": max_token_length is " + std::to_string(max_len) + "; expected > 0");
  uint64_t pos = 4;
  // Each token takes at least 8 bytes (score and length).
  if ((uint64_t)vocab_size > (size - pos) / 8)
    return invalid_argument(path + ": file is " + std::to_string(size) + " bytes; too short for " +
                            std::to_string(vocab_size) + " tokens (vocab_size from the model)");
  TokenizerData d;
  d.model = "llama";
  d.tokens.reserve((size_t)vocab_size);
  d.scores.reserve((size_t)vocab_size);
  d.types.reserve((size_t)vocab_size);
  for (int32_t i = 0; i < vocab_size; ++i) {
    const std::string what = path + ": token " + std::to_string(i);
    if (size - pos < 8)
      return invalid_argument(what + ": score and length at offset " + std::to_string(pos) +
                              " run past the end of the file (size " + std::to_string(size) + ")");
    float score;
    int32_t len;
    std::memcpy(&score, b + pos, 4);
    std::memcpy(&len, b + pos + 4, 4);
    pos += 8;
    if (len < 0 || (uint64_t)len > size - pos)
      return invalid_argument(what + ": length " + std::to_string(len) + " at offset " + std::to_string(pos - 4) +
                              " runs past the end of the file (size " + std::to_string(size) + ")");
    const std::string_view piece(reinterpret_cast<const char*>(b + pos), (size_t)len);
    pos += (uint64_t)len;
    d.tokens.push_back(spaces_to_marks(piece));
    d.scores.push_back(score);
    // llama2.c's export: 0 <unk>, 1 BOS, 2 EOS, then byte pieces and the rest.
    d.types.push_back(i == 0 ? TokenType::unknown
                      : i <= 2 ? TokenType::control
                      : is_byte_piece(piece) ? TokenType::byte
                                             : TokenType::normal);
  }
  if (pos != size)
    return invalid_argument(path + ": " + std::to_string(size - pos) + " bytes follow the last of the " +
                            std::to_string(vocab_size) + " tokens; expected the file to end (is vocab_size right?)");
  return build(std::move(d), path, TokenizerAlgorithm::llama2c);
}

}  // namespace tessera
