// TextTokenizer: a model's vocabulary, or a tokenizer file, without the model's weights in use.
#include <map>
#include <optional>

#include "engine/models/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tessera/model_file.h"

namespace tessera {

struct TextTokenizer::Impl {
  Tokenizer tokenizer;
  std::string source;
};

TextTokenizer::TextTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TextTokenizer::~TextTokenizer() = default;

Expected<std::unique_ptr<TextTokenizer>> TextTokenizer::open(const TokenizerOptions& o) {
  if (o.model_path.empty() && o.tokenizer_path.empty())
    return invalid_argument("tokenize: give a model (-m) or a tokenizer file (-z), or both");
  int32_t vocab_size = 0;
  std::optional<TokenizerData> inside;
  if (!o.model_path.empty()) {
    TS_ASSIGN_OR_RETURN(ModelWeights weights, load_model(o.model_path));
    vocab_size = weights.config.vocab_size;
    inside = std::move(weights.tokenizer);
  }
  if (o.tokenizer_path.empty() && !inside) return invalid_argument(o.model_path + ": has no tokenizer; give one with -z");
  const std::string source = o.tokenizer_path.empty() ? o.model_path : o.tokenizer_path;
  TS_ASSIGN_OR_RETURN(Tokenizer tok, !o.tokenizer_path.empty() ? Tokenizer::load_file(o.tokenizer_path, vocab_size)
                                                                : Tokenizer::from_data(std::move(*inside), o.model_path));
  // Fewer tokens than embedding rows is harmless for tokenizing (llama.cpp pads so too).
  if (vocab_size > 0 && tok.vocab_size() > vocab_size)
    return invalid_argument(source + ": tokenizer has " + std::to_string(tok.vocab_size()) +
                            " tokens; the model's vocab_size is only " + std::to_string(vocab_size));
  return std::unique_ptr<TextTokenizer>(new TextTokenizer(std::make_unique<Impl>(Impl{std::move(tok), source})));
}

std::vector<int32_t> TextTokenizer::encode(std::string_view text, const TokenizeOptions& options) const {
  EncodeOptions o = impl_->tokenizer.default_options();
  if (!options.bos) o.add_bos = false;
  o.parse_special = options.parse_special;
  return impl_->tokenizer.encode(text, o);
}

std::string TextTokenizer::token_bytes(int32_t id) const { return impl_->tokenizer.token_bytes(id, true); }
int32_t TextTokenizer::vocab_size() const { return impl_->tokenizer.vocab_size(); }

namespace {

SpecialToken special(const TokenizerData& d, int32_t id) {
  if (id < 0 || (size_t)id >= d.tokens.size()) return {};
  return {id, d.tokens[(size_t)id]};
}

const char* type_name(TokenType t) {
  switch (t) {
    case TokenType::undefined: return "undefined";
    case TokenType::normal: return "normal";
    case TokenType::unknown: return "unknown";
    case TokenType::control: return "control";
    case TokenType::user_defined: return "user-defined";
    case TokenType::unused: return "unused";
    case TokenType::byte: return "byte";
  }
  return "?";
}

}  // namespace

TokenizerInfo TextTokenizer::info() const {
  const Tokenizer& tok = impl_->tokenizer;
  const TokenizerData& d = tok.data();
  TokenizerInfo i;
  i.source = impl_->source;
  i.description = tok.description();
  i.vocab_size = tok.vocab_size();
  i.bos = special(d, d.bos_id);
  i.eos = special(d, d.eos_id);
  i.unk = special(d, d.unk_id);
  i.pad = special(d, d.pad_id);
  i.add_bos = d.add_bos;
  i.add_eos = d.add_eos;
  i.byte_level = tok.algorithm() == TokenizerAlgorithm::byte_bpe;
  i.add_space_prefix = d.add_space_prefix;
  std::map<TokenType, int32_t> counts;
  for (TokenType t : d.types) ++counts[t];
  for (const auto& [t, n] : counts) i.token_types.emplace_back(type_name(t), n);
  return i;
}

}  // namespace tessera
