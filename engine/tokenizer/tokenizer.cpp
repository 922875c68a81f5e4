// llama2.c run.c's tokenizer, faithfully: the references in ../shared were
// made with it, so every quirk here is deliberate (see each comment).
#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>

namespace tessera {

namespace {
constexpr std::string_view kSpaceMark = "\xe2\x96\x81";  // U+2581, SentencePiece's word boundary

std::string marks_to_spaces(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out += ' ';
      i += kSpaceMark.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xNN>" → NN, else -1.
int byte_piece_value(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  const int hi = hex_digit(p[3]), lo = hex_digit(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// C-locale isprint || isspace, as run.c's safe_printf tests a lone byte.
bool printable_or_space(unsigned char c) { return (c >= 0x20 && c <= 0x7e) || (c >= 0x09 && c <= 0x0d); }
}  // namespace

Expected<Tokenizer> Tokenizer::from_data(TokenizerData data, const std::string& source) {
  if (data.model != "llama")
    return unsupported(source + ": tokenizer model '" + data.model + "' is not supported; expected 'llama' (SentencePiece)");
  const size_t n = data.tokens.size();
  if (n == 0) return invalid_argument(source + ": tokenizer has no tokens");
  if (n > (size_t)INT32_MAX) return invalid_argument(source + ": tokenizer has more than 2^31 tokens");
  if (data.scores.empty()) data.scores.assign(n, 0.0f);
  if (data.types.empty()) data.types.assign(n, TokenType::normal);
  if (data.scores.size() != n)
    return invalid_argument(source + ": tokenizer has " + std::to_string(data.scores.size()) + " scores for " +
                            std::to_string(n) + " tokens");
  if (data.types.size() != n)
    return invalid_argument(source + ": tokenizer has " + std::to_string(data.types.size()) + " token types for " +
                            std::to_string(n) + " tokens");
  for (const auto& [what, id] : {std::pair<const char*, int32_t>{"bos", data.bos_id}, {"eos", data.eos_id},
                                 {"unk", data.unk_id}}) {
    if (id < 0 || (size_t)id >= n)
      return invalid_argument(source + ": tokenizer " + what + " id " + std::to_string(id) + " is not below the " +
                              std::to_string(n) + " tokens");
  }

  Tokenizer t;
  t.data_ = std::move(data);
  t.pieces_.reserve(n);
  for (const auto& p : t.data_.tokens) t.pieces_.push_back(marks_to_spaces(p));
  // Control pieces (<s>, </s>) are never produced from text: run.c's
  // tokenizer.bin spells them "\n<s>\n", which no merge reaches.
  for (int32_t id = 0; id < (int32_t)n; ++id)
    if (t.data_.types[(size_t)id] != TokenType::control) t.sorted_.push_back(id);
  std::stable_sort(t.sorted_.begin(), t.sorted_.end(),
                   [&](int32_t a, int32_t b) { return t.pieces_[(size_t)a] < t.pieces_[(size_t)b]; });
  t.byte_ids_.resize(256);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    int32_t id = t.lookup(name);
    if (id < 0) id = b + 3 < (int32_t)n ? b + 3 : t.data_.unk_id;
    t.byte_ids_[(size_t)b] = id;
  }
  return t;
}

int32_t Tokenizer::lookup(std::string_view piece) const {
  const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), piece,
                                   [&](int32_t id, std::string_view p) { return pieces_[(size_t)id] < p; });
  return it != sorted_.end() && pieces_[(size_t)*it] == piece ? *it : -1;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool add_eos) const {
  std::vector<int32_t> ids;
  if (add_bos) ids.push_back(data_.bos_id);
  // run.c's dummy prefix: the piece " " before any non-empty text.
  if (!text.empty() && data_.add_space_prefix) {
    const int32_t space = lookup(" ");
    if (space >= 0) ids.push_back(space);
  }
  // One piece per UTF-8 codepoint (a byte and up to 3 continuation bytes,
  // as run.c groups them), else one byte-fallback piece per byte.
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    while (i + len < text.size() && ((unsigned char)text[i + len] & 0xC0) == 0x80 && len < 4) ++len;
    const int32_t id = lookup(text.substr(i, len));
    if (id >= 0) {
      ids.push_back(id);
    } else {
      for (size_t k = 0; k < len; ++k) ids.push_back(byte_ids_[(unsigned char)text[i + k]]);
    }
    i += len;
  }
  // Greedy merges: the adjacent pair whose concatenation is the
  // highest-scoring piece (strictly greater, so the leftmost among equals;
  // run.c starts from -1e10). BOS takes part, as in run.c.
  auto pair_id = [&](size_t i) {
    return lookup(pieces_[(size_t)ids[i]] + pieces_[(size_t)ids[i + 1]]);
  };
  std::vector<int32_t> merged;  // merged[i]: the piece ids[i] + ids[i+1] makes, or -1
  for (size_t i = 0; i + 1 < ids.size(); ++i) merged.push_back(pair_id(i));
  for (;;) {
    float best_score = -1e10f;
    int64_t best = -1;
    for (size_t i = 0; i < merged.size(); ++i) {
      if (merged[i] >= 0 && data_.scores[(size_t)merged[i]] > best_score) {
        best_score = data_.scores[(size_t)merged[i]];
        best = (int64_t)i;
      }
    }
    if (best < 0) break;
    const size_t b = (size_t)best;
    ids[b] = merged[b];
    ids.erase(ids.begin() + (int64_t)b + 1);
    merged.erase(merged.begin() + (int64_t)b);
    if (b < merged.size()) merged[b] = pair_id(b);
    if (b > 0) merged[b - 1] = pair_id(b - 1);
  }
  if (add_eos) ids.push_back(data_.eos_id);
  return ids;
}

std::string Tokenizer::decode_piece(int32_t prev, int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  std::string_view piece = pieces_[(size_t)id];
  if (prev == data_.bos_id && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  const int byte = byte_piece_value(piece);
  if (byte >= 0) return std::string(1, (char)byte);
  return std::string(piece);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 1; i < ids.size(); ++i) {
    const std::string piece = decode_piece(ids[i - 1], ids[i]);
    if (piece.size() == 1 && !printable_or_space((unsigned char)piece[0])) continue;
    out += piece;
  }
  return out;
}

}  // namespace tessera
