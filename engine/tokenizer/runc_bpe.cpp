#include "engine/tokenizer/runc_bpe.h"

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
}  // namespace

RuncBpe::RuncBpe(const TokenizerData& d) : d_(d) {
  const size_t n = d.tokens.size();
  pieces_.reserve(n);
  for (const auto& p : d.tokens) pieces_.push_back(marks_to_spaces(p));
  for (int32_t id = 0; id < (int32_t)n; ++id)
    if (d.types[(size_t)id] != TokenType::control) sorted_.push_back(id);
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [&](int32_t a, int32_t b) { return pieces_[(size_t)a] < pieces_[(size_t)b]; });
  byte_ids_.resize(256);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    int32_t id = lookup(name);
    if (id < 0) id = b + 3 < (int32_t)n ? b + 3 : d.unk_id;
    byte_ids_[(size_t)b] = id;
  }
}

int32_t RuncBpe::lookup(std::string_view piece) const {
  const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), piece,
                                   [&](int32_t id, std::string_view p) { return pieces_[(size_t)id] < p; });
  return it != sorted_.end() && pieces_[(size_t)*it] == piece ? *it : -1;
}

void RuncBpe::encode(std::string_view text, bool add_bos, std::vector<int32_t>& out) const {
  std::vector<int32_t> ids;
  if (add_bos) ids.push_back(d_.bos_id);
  // run.c's dummy prefix: the piece " " before any non-empty text.
  if (!text.empty() && d_.add_space_prefix) {
    const int32_t space = lookup(" ");
    if (space >= 0) ids.push_back(space);
  }
  // One piece per UTF-8 code point (a byte and up to 3 continuation bytes,
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
  // run.c starts from -1e10).
  auto pair_id = [&](size_t i) { return lookup(pieces_[(size_t)ids[i]] + pieces_[(size_t)ids[i + 1]]); };
  std::vector<int32_t> merged;  // merged[i]: the piece ids[i] + ids[i+1] makes, or -1
  for (size_t i = 0; i + 1 < ids.size(); ++i) merged.push_back(pair_id(i));
  for (;;) {
    float best_score = -1e10f;
    int64_t best = -1;
    for (size_t i = 0; i < merged.size(); ++i) {
      if (merged[i] >= 0 && d_.scores[(size_t)merged[i]] > best_score) {
        best_score = d_.scores[(size_t)merged[i]];
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
  out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace tessera
