#include "engine/tokenizer/vocab.h"

#include <algorithm>

namespace tessera {

namespace {
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += (char)c;
    }
  }
  return out;
}
}  // namespace

int byte_piece_value(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return -1;
  const int hi = hex_digit(p[3]), lo = hex_digit(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Expected<Vocab> Vocab::build(const TokenizerData& d, const std::string& source) {
  Vocab v;
  v.size_ = d.tokens.size();
  v.ids_.reserve(d.tokens.size());
  for (int32_t id = 0; id < (int32_t)d.tokens.size(); ++id) {
    const std::string& piece = d.tokens[(size_t)id];
    if (piece.empty()) continue;
    const auto [it, fresh] = v.ids_.emplace(piece, id);
    if (!fresh)
      return invalid_argument(source + ": tokenizer piece '" + printable(piece) + "' is both token " +
                              std::to_string(it->second) + " and token " + std::to_string(id) +
                              "; expected every piece once");
    const TokenType t = d.types.empty() ? TokenType::normal : d.types[(size_t)id];
    if (t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown) v.specials_.push_back(id);
  }
  std::stable_sort(v.specials_.begin(), v.specials_.end(), [&](int32_t a, int32_t b) {
    return d.tokens[(size_t)a].size() > d.tokens[(size_t)b].size();
  });
  return v;
}

int32_t Vocab::find(std::string_view piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

}  // namespace tessera
