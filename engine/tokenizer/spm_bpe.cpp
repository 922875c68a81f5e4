#include "engine/tokenizer/spm_bpe.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <queue>
#include <string>

#include "engine/tokenizer/unicode.h"

namespace tessera {

namespace {
struct Symbol {
  int prev, next;
  const char* text;
  size_t n;
};

struct Bigram {
  int left, right;
  float score;
  size_t size;
};

// llama.cpp's llm_bigram_spm::comparator: higher score first, then lower left.
struct BigramOrder {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

class Session {
 public:
  Session(const TokenizerData& d, const Vocab& v, const std::vector<int32_t>& byte_ids)
      : d_(d), v_(v), byte_ids_(byte_ids) {}

  void run(std::string_view text, std::vector<int32_t>& out) {
    int index = 0;
    for (size_t offs = 0; offs < text.size();) {
      Symbol s;
      s.text = text.data() + offs;
      s.n = std::min(unicode::utf8_len(text[offs]), text.size() - offs);
      offs += s.n;
      s.prev = index - 1;
      s.next = offs == text.size() ? -1 : index + 1;
      ++index;
      symbols_.push_back(s);
    }
    for (int i = 1; i < (int)symbols_.size(); ++i) try_add_bigram(i - 1, i);
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[(size_t)b.left];
      Symbol& r = symbols_[(size_t)b.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // one side already merged elsewhere
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[(size_t)r.next].prev = b.left;
      try_add_bigram(l.prev, b.left);
      try_add_bigram(b.left, l.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[(size_t)i].next) resegment(symbols_[(size_t)i], out);
  }

 private:
  void resegment(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view text(s.text, s.n);
    const int32_t id = v_.find(text);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    const auto p = rev_merge_.find(std::string(text));
    if (p == rev_merge_.end()) {
      for (size_t j = 0; j < s.n; ++j) out.push_back(byte_ids_[(unsigned char)s.text[j]]);
      return;
    }
    resegment(symbols_[(size_t)p->second.first], out);
    resegment(symbols_[(size_t)p->second.second], out);
  }

  void try_add_bigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const std::string text(symbols_[(size_t)left].text, symbols_[(size_t)left].n + symbols_[(size_t)right].n);
    const int32_t id = v_.find(text);
    if (id < 0) return;
    queue_.push({left, right, d_.scores[(size_t)id], text.size()});
    // Symbols keep their start, so the pair's texts stay readable when resegmenting.
    rev_merge_[text] = {left, right};
  }

  const TokenizerData& d_;
  const Vocab& v_;
  const std::vector<int32_t>& byte_ids_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
  std::map<std::string, std::pair<int, int>> rev_merge_;
};
}  // namespace

SpmBpe::SpmBpe(const TokenizerData& d, const Vocab& v) : d_(d), v_(v), byte_ids_(256) {
  // llama.cpp's byte_to_token: "<0xNN>" (upper-case hex), else the byte as a
  // one-byte piece; where llama.cpp would abort we fall back to unk.
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    int32_t id = v.find(name);
    if (id < 0) id = v.find(std::string(1, (char)b));
    if (id < 0) id = d.unk_id;
    byte_ids_[(size_t)b] = id;
  }
}

void SpmBpe::encode(std::string_view escaped, std::vector<int32_t>& out) const {
  Session(d_, v_, byte_ids_).run(escaped, out);
}

}  // namespace tessera
