#include "engine/tokenizer/byte_bpe.h"

#include <algorithm>
#include <array>
#include <queue>

#include "engine/tokenizer/unicode.h"

namespace tessera {

namespace {
// bytes_to_unicode() of GPT-2's encoder.py: printable Latin-1 bytes spell
// themselves, the other 68 take U+0100 onwards in byte order.
struct ByteTable {
  std::array<std::string, 256> to_utf8;
  std::unordered_map<uint32_t, uint8_t> from_cp;
  ByteTable() {
    auto self = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = self(b) ? (uint32_t)b : next++;
      unicode::append_utf8(to_utf8[(size_t)b], cp);
      from_cp[cp] = (uint8_t)b;
    }
  }
};

const ByteTable& table() {
  static const ByteTable t;
  return t;
}

struct Symbol {
  int prev, next;
  const char* text;
  size_t n;
};

struct Bigram {
  int left, right;
  std::string text;
  int rank;
};

// llama.cpp's llm_bigram_bpe::comparator: lower rank first, then lower left.
struct BigramOrder {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
  }
};

std::string pair_key(std::string_view l, std::string_view r) {
  std::string k;
  k.reserve(l.size() + 1 + r.size());
  k.append(l);
  k += '\0';
  k.append(r);
  return k;
}
}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return table().to_utf8[b]; }

std::string ByteBpe::piece_bytes(std::string_view piece) {
  std::string out;
  const auto& t = table();
  for (uint32_t cp : unicode::decode_utf8(piece)) {
    const auto it = t.from_cp.find(cp);
    if (it != t.from_cp.end()) out += (char)it->second;
    else unicode::append_utf8(out, cp);
  }
  return out;
}

Expected<ByteBpe> ByteBpe::build(const TokenizerData& d, const Vocab& v, const std::string& source) {
  ByteBpe b(v);
  const auto pre = pre_tokenizer_from_name(d.pre);
  if (!pre) {
    if (d.pre.empty())
      return invalid_argument(source + ": key 'tokenizer.ggml.pre' is missing; a gpt2 (byte-level BPE) vocabulary "
                              "needs its pre-tokenizer named (supported: " + std::string(supported_pre_tokenizers()) + ")");
    return unsupported(source + ": key 'tokenizer.ggml.pre' is '" + d.pre +
                       "'; supported pre-tokenizers: " + std::string(supported_pre_tokenizers()));
  }
  b.pre_ = *pre;
  b.ignore_merges_ = *pre == PreTokenizer::llama3;  // llama.cpp sets it for llama-bpe
  if (d.merges.empty())
    return invalid_argument(source + ": key 'tokenizer.ggml.merges' is missing or empty; a gpt2 (byte-level BPE) "
                            "vocabulary needs its merges");
  b.ranks_.reserve(d.merges.size());
  for (size_t i = 0; i < d.merges.size(); ++i) {
    const std::string& m = d.merges[i];
    // llama.cpp splits at the first space after the first byte.
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos)
      return invalid_argument(source + ": key 'tokenizer.ggml.merges' element " + std::to_string(i) + " ('" + m +
                              "') has no space; expected \"left right\"");
    b.ranks_.emplace(pair_key(std::string_view(m).substr(0, sp), std::string_view(m).substr(sp + 1)), (int)i);
  }
  return b;
}

int ByteBpe::rank(std::string_view l, std::string_view r) const {
  const auto it = ranks_.find(pair_key(l, r));
  return it == ranks_.end() ? -1 : it->second;
}

void ByteBpe::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  size_t offset = 0;
  if (ignore_merges_ && v_->find(word) >= 0) {
    symbols.push_back({-1, -1, word.c_str(), word.size()});
    offset = word.size();
  }
  int index = 0;
  while (offset < word.size()) {
    Symbol s;
    s.text = word.c_str() + offset;
    s.n = std::min(word.size() - offset, unicode::utf8_len(word[offset]));
    offset += s.n;
    s.prev = index - 1;
    s.next = offset == word.size() ? -1 : index + 1;
    ++index;
    symbols.push_back(s);
  }
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto add_bigram = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const std::string_view l(symbols[(size_t)left].text, symbols[(size_t)left].n);
    const std::string_view r(symbols[(size_t)right].text, symbols[(size_t)right].n);
    const int rk = rank(l, r);
    if (rk < 0) return;
    std::string text(l);
    text.append(r);
    queue.push({left, right, std::move(text), rk});
  };
  for (int i = 1; i < (int)symbols.size(); ++i) add_bigram(i - 1, i);
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[(size_t)b.left];
    Symbol& r = symbols[(size_t)b.right];
    if (l.n == 0 || r.n == 0) continue;
    if (l.n + r.n != b.text.size() || std::string_view(l.text, l.n + r.n) != b.text) continue;  // outdated
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[(size_t)r.next].prev = b.left;
    add_bigram(l.prev, b.left);
    add_bigram(b.left, l.next);
  }
  for (const Symbol& s : symbols) {
    if (s.n == 0) continue;
    const std::string_view str(s.text, s.n);
    const int32_t id = v_->find(str);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // llama.cpp's fallback: each byte of the spelled text as a one-byte piece, if any.
    for (char c : str) {
      const int32_t b = v_->find(std::string_view(&c, 1));
      if (b >= 0) out.push_back(b);
    }
  }
}

void ByteBpe::encode(std::string_view text, std::vector<int32_t>& out) const {
  const std::vector<uint32_t> cpts = unicode::decode_utf8(text);
  for (const auto& [begin, end] : split_words(pre_, cpts)) {
    // The word's code points back to UTF-8 (an invalid byte is U+FFFD by
    // now, as in llama.cpp), each byte spelled by the table.
    std::string word;
    for (char c : unicode::to_utf8(cpts, begin, end)) word += byte_to_unicode((uint8_t)c);
    encode_word(word, out);
  }
}

}  // namespace tessera
