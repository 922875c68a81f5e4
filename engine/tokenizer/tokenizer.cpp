// The Tokenizer facade: validation of a vocabulary, llama.cpp's special-token
// partition, BOS/EOS, and the three ways back from ids to text.
#include "engine/tokenizer/tokenizer.h"

#include <optional>

#include "core/mapped_file.h"
#include "engine/tokenizer/byte_bpe.h"
#include "engine/tokenizer/runc_bpe.h"
#include "engine/tokenizer/spm_bpe.h"
#include "engine/tokenizer/tokenizer_json.h"
#include "engine/tokenizer/vocab.h"

namespace tessera {

namespace {
constexpr std::string_view kSpaceMark = "\xe2\x96\x81";  // U+2581, SentencePiece's word boundary

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

// C-locale isprint || isspace, as run.c's safe_printf tests a lone byte.
bool printable_or_space(unsigned char c) { return (c >= 0x20 && c <= 0x7e) || (c >= 0x09 && c <= 0x0d); }

// A piece of text still to tokenize, or a token split out of it.
struct Fragment {
  int32_t token = -1;  // >= 0: a special token
  size_t offset = 0, length = 0;
};
}  // namespace

struct Tokenizer::Impl {
  TokenizerData data;
  TokenizerAlgorithm algorithm = TokenizerAlgorithm::spm;
  std::optional<Vocab> vocab;
  std::optional<RuncBpe> runc;
  std::optional<SpmBpe> spm;
  std::optional<ByteBpe> bpe;
  std::vector<std::string> printed;  // SentencePiece pieces with U+2581 as a space (run.c's spelling)

  TokenType type(int32_t id) const { return data.types[(size_t)id]; }

  // llama.cpp's tokenizer_st_partition: each special piece, longest first,
  // cut out of every text fragment where it occurs.
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const {
    std::vector<Fragment> frags;
    if (text.empty()) return frags;
    frags.push_back({-1, 0, text.size()});
    for (int32_t id : vocab->specials()) {
      const TokenType t = type(id);
      if (!parse_special && (t == TokenType::control || t == TokenType::unknown)) continue;
      const std::string& piece = data.tokens[(size_t)id];
      std::vector<Fragment> next;
      next.reserve(frags.size());
      for (const Fragment& f : frags) {
        if (f.token >= 0) {
          next.push_back(f);
          continue;
        }
        size_t at = f.offset;
        const size_t end = f.offset + f.length;
        for (;;) {
          const size_t m = text.substr(0, end).find(piece, at);
          if (m == std::string_view::npos) break;
          if (m > at) next.push_back({-1, at, m - at});
          next.push_back({id, m, piece.size()});
          at = m + piece.size();
        }
        if (at < end) next.push_back({-1, at, end - at});
      }
      frags = std::move(next);
    }
    return frags;
  }
};

Expected<Tokenizer> Tokenizer::from_data(TokenizerData data, const std::string& source) {
  if (data.model == "llama") return build(std::move(data), source, TokenizerAlgorithm::spm);
  if (data.model == "gpt2") return build(std::move(data), source, TokenizerAlgorithm::byte_bpe);
  return unsupported(source + ": tokenizer model '" + data.model +
                     "' is not supported; expected 'llama' (SentencePiece BPE) or 'gpt2' (byte-level BPE)");
}

Expected<Tokenizer> Tokenizer::build(TokenizerData data, const std::string& source, TokenizerAlgorithm algorithm) {
  const size_t n = data.tokens.size();
  if (n == 0) return invalid_argument(source + ": tokenizer has no tokens");
  if (n > (size_t)INT32_MAX) return invalid_argument(source + ": tokenizer has more than 2^31 tokens");
  const bool sentencepiece = algorithm != TokenizerAlgorithm::byte_bpe;
  if (data.scores.empty()) {
    // SentencePiece merges by score: without scores it would merge blindly.
    if (sentencepiece)
      return invalid_argument(source + ": tokenizer has no scores; a SentencePiece vocabulary needs one per token");
    data.scores.assign(n, 0.0f);
  }
  if (data.types.empty()) data.types.assign(n, TokenType::normal);
  if (data.scores.size() != n)
    return invalid_argument(source + ": tokenizer has " + std::to_string(data.scores.size()) + " scores for " +
                            std::to_string(n) + " tokens");
  if (data.types.size() != n)
    return invalid_argument(source + ": tokenizer has " + std::to_string(data.types.size()) + " token types for " +
                            std::to_string(n) + " tokens");
  for (const auto& [what, id] : {std::pair<const char*, int32_t>{"bos", data.bos_id}, {"eos", data.eos_id},
                                 {"unk", data.unk_id}, {"padding", data.pad_id}}) {
    // SentencePiece needs bos, eos and unk; byte-level BPE may go without (-1).
    const bool optional = id == -1 && (!sentencepiece || std::string_view(what) == "padding");
    if (!optional && (id < 0 || (size_t)id >= n))
      return invalid_argument(source + ": tokenizer " + what + " id " + std::to_string(id) + " is not below the " +
                              std::to_string(n) + " tokens");
  }

  auto impl = std::make_shared<Impl>();
  impl->data = std::move(data);
  impl->algorithm = algorithm;
  const TokenizerData& d = impl->data;
  if (algorithm == TokenizerAlgorithm::llama2c) {
    impl->runc.emplace(d);  // run.c allows repeated pieces; it finds the first
  } else {
    TS_ASSIGN_OR_RETURN(Vocab v, Vocab::build(d, source));
    impl->vocab.emplace(std::move(v));
  }
  if (algorithm == TokenizerAlgorithm::spm) impl->spm.emplace(d, *impl->vocab);
  if (algorithm == TokenizerAlgorithm::byte_bpe) {
    TS_ASSIGN_OR_RETURN(ByteBpe b, ByteBpe::build(d, *impl->vocab, source));
    impl->bpe.emplace(std::move(b));
  }
  if (sentencepiece) {
    impl->printed.reserve(n);
    for (const auto& p : d.tokens) impl->printed.push_back(replace_all(p, kSpaceMark, " "));
  }
  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& o) const {
  const Impl& m = *impl_;
  std::vector<int32_t> out;
  switch (m.algorithm) {
    case TokenizerAlgorithm::llama2c:
      m.runc->encode(text, o.add_bos, out);
      break;
    case TokenizerAlgorithm::spm: {
      if (o.add_bos) out.push_back(m.data.bos_id);
      bool prev_special = true;  // the text's first fragment gets the space prefix
      for (const Fragment& f : m.partition(text, o.parse_special)) {
        if (f.token >= 0) {
          out.push_back(f.token);
          prev_special = true;
          continue;
        }
        std::string piece = m.data.add_space_prefix && prev_special ? " " : "";
        piece.append(text.substr(f.offset, f.length));
        m.spm->encode(replace_all(piece, " ", kSpaceMark), out);
        prev_special = false;
      }
      break;
    }
    case TokenizerAlgorithm::byte_bpe:
      if (o.add_bos && m.data.bos_id >= 0) out.push_back(m.data.bos_id);
      for (const Fragment& f : m.partition(text, o.parse_special)) {
        if (f.token >= 0) out.push_back(f.token);
        else m.bpe->encode(text.substr(f.offset, f.length), out);
      }
      break;
  }
  if (o.add_eos && m.data.eos_id >= 0) out.push_back(m.data.eos_id);
  return out;
}

std::string Tokenizer::token_bytes(int32_t id, bool special) const {
  const Impl& m = *impl_;
  if (id < 0 || id >= vocab_size()) return {};
  const TokenType t = m.type(id);
  const bool control = t == TokenType::control || t == TokenType::unknown;
  if (control && !special) return {};
  const std::string& text = m.data.tokens[(size_t)id];
  if (control || t == TokenType::user_defined) return text;
  if (m.algorithm == TokenizerAlgorithm::byte_bpe) return t == TokenType::normal ? ByteBpe::piece_bytes(text) : "";
  if (t == TokenType::normal) return m.printed[(size_t)id];
  if (t == TokenType::byte) {
    const int b = byte_piece_value(text);
    return b >= 0 ? std::string(1, (char)b) : std::string();
  }
  return {};  // unused, undefined: nothing, as llama.cpp
}

std::string Tokenizer::detokenize(const std::vector<int32_t>& ids, bool render_special) const {
  const Impl& m = *impl_;
  size_t first = 0;
  if (!ids.empty() && ids[0] == m.data.bos_id) first = 1;
  bool remove_space = m.algorithm != TokenizerAlgorithm::byte_bpe && m.data.add_space_prefix;
  std::string out;
  for (size_t i = first; i < ids.size(); ++i) {
    std::string piece = token_bytes(ids[i], render_special);
    if (remove_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    remove_space = false;
    out += piece;
  }
  return out;
}

std::string Tokenizer::decode_piece(int32_t prev, int32_t id) const {
  const Impl& m = *impl_;
  if (id < 0 || id >= vocab_size()) return {};
  if (m.algorithm == TokenizerAlgorithm::byte_bpe) return token_bytes(id, false);
  std::string_view piece = m.printed[(size_t)id];
  if (prev == m.data.bos_id && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  const int byte = byte_piece_value(piece);
  if (byte >= 0) return std::string(1, (char)byte);
  return std::string(piece);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const bool run_c = impl_->algorithm != TokenizerAlgorithm::byte_bpe;
  std::string out;
  for (size_t i = 1; i < ids.size(); ++i) {
    const std::string piece = decode_piece(ids[i - 1], ids[i]);
    if (run_c && piece.size() == 1 && !printable_or_space((unsigned char)piece[0])) continue;
    out += piece;
  }
  return out;
}

int32_t Tokenizer::vocab_size() const { return (int32_t)impl_->data.tokens.size(); }
const TokenizerData& Tokenizer::data() const { return impl_->data; }
TokenizerAlgorithm Tokenizer::algorithm() const { return impl_->algorithm; }

std::string Tokenizer::description() const {
  switch (impl_->algorithm) {
    case TokenizerAlgorithm::llama2c: return "SentencePiece BPE (llama2.c run.c rules)";
    case TokenizerAlgorithm::spm: return "SentencePiece BPE (llama.cpp rules)";
    case TokenizerAlgorithm::byte_bpe:
      return "byte-level BPE (" + std::string(pre_tokenizer_name(impl_->bpe->pre())) + ", " +
             std::to_string(impl_->data.merges.size()) + " merges)";
  }
  return {};
}

Expected<Tokenizer> Tokenizer::load_hf_json(const std::string& path) {
  TS_ASSIGN_OR_RETURN(TokenizerData d, read_hf_tokenizer_json(path));
  return from_data(std::move(d), path);
}

Expected<Tokenizer> Tokenizer::load_file(const std::string& path, int32_t vocab_size) {
  bool json = false;
  {
    TS_ASSIGN_OR_RETURN(const MappedFile f, MappedFile::open(path));
    const auto* b = reinterpret_cast<const char*>(f.data());
    size_t i = 0;
    while (i < f.size() && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) ++i;
    json = i < f.size() && b[i] == '{';
  }
  if (json) return load_hf_json(path);
  if (vocab_size <= 0)
    return invalid_argument(path + ": is not a tokenizer.json, and a llama2.c tokenizer.bin can only be read "
                            "with its model's vocab_size (give the model too)");
  return load_llama2c(path, vocab_size);
}

}  // namespace tessera
