#include "engine/tokenizer/tokenizer_json.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace tessera {

namespace {
using json = nlohmann::json;
constexpr const char* kSpaceMark = "\xe2\x96\x81";

// A member by reference, or null: flatten() keeps pointers into it, so no copies.
const json& member(const json& j, const char* key) {
  static const json null_value;
  return j.is_object() && j.contains(key) ? j[key] : null_value;
}

std::string cut(const std::string& s) { return s.size() <= 80 ? s : s.substr(0, 80) + "..."; }

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  // The file's content given, not read from `path`.
  Reader(std::string path, std::string_view text) : path_(std::move(path)), text_(std::string(text)) {}

  Status fail(const std::string& field, const std::string& what) const {
    return invalid_argument(path_ + ": field '" + field + "' " + what);
  }
  Status refuse(const std::string& field, const std::string& what) const {
    return unsupported(path_ + ": field '" + field + "' " + what);
  }

  Expected<json> parse() const {
    std::string read;
    if (!text_) {
      std::ifstream in(path_, std::ios::binary);
      if (!in) return io_error(path_ + ": cannot be opened");
      std::stringstream ss;
      ss << in.rdbuf();
      read = ss.str();
    }
    json j = json::parse(text_ ? *text_ : read, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return invalid_argument(path_ + ": is not valid JSON; expected a Hugging Face tokenizer.json");
    if (!j.is_object()) return invalid_argument(path_ + ": is JSON but not an object; expected a tokenizer.json");
    return j;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<std::string> text_;
};

// Every pre-tokenizer (or normalizer) of a possibly Sequence-wrapped node.
std::vector<const json*> flatten(const json& node, const char* list_key) {
  std::vector<const json*> out;
  if (!node.is_object()) return out;
  if (node.value("type", "") == "Sequence" && node.contains(list_key) && node[list_key].is_array()) {
    for (const auto& child : node[list_key])
      for (const json* j : flatten(child, list_key)) out.push_back(j);
  } else {
    out.push_back(&node);
  }
  return out;
}

const json* find_type(const std::vector<const json*>& nodes, const char* type) {
  for (const json* n : nodes)
    if (n->value("type", "") == type) return n;
  return nullptr;
}

std::string token_content(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

struct Specials {
  std::optional<std::string> bos, eos, unk, pad;
  std::optional<bool> add_bos, add_eos;
};

// tokenizer_config.json beside the file, when there is one.
Expected<Specials> read_config(const std::string& json_path) {
  Specials s;
  const auto cfg = std::filesystem::path(json_path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(cfg, ec)) return s;
  Reader r(cfg.string());
  TS_ASSIGN_OR_RETURN(const json j, r.parse());
  auto name = [&](const char* key, std::optional<std::string>* out) {
    if (j.contains(key) && !j[key].is_null()) {
      const std::string c = token_content(j[key]);
      if (!c.empty()) *out = c;
    }
  };
  name("bos_token", &s.bos);
  name("eos_token", &s.eos);
  name("unk_token", &s.unk);
  name("pad_token", &s.pad);
  for (const auto& [key, out] : {std::pair<const char*, std::optional<bool>*>{"add_bos_token", &s.add_bos},
                                 {"add_eos_token", &s.add_eos}}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    if (!j[key].is_boolean()) return r.fail(key, "is " + std::string(j[key].type_name()) + "; expected a boolean");
    *out = j[key].get<bool>();
  }
  return s;
}

// From a TemplateProcessing post-processor: the special tokens around $A.
void read_template(const json& post, Specials* s) {
  for (const json* p : flatten(post, "processors")) {
    if (p->value("type", "") != "TemplateProcessing" || !p->contains("single") || !(*p)["single"].is_array()) continue;
    const json& single = (*p)["single"];
    bool seen_a = false;
    for (const auto& item : single) {
      if (item.contains("Sequence")) seen_a = true;
      if (!item.contains("SpecialToken")) continue;
      const std::string id = item["SpecialToken"].value("id", "");
      if (!seen_a && !s->bos) {
        s->bos = id;
        s->add_bos = true;
      } else if (seen_a && !s->eos) {
        s->eos = id;
        s->add_eos = true;
      }
    }
    if (!s->add_bos) s->add_bos = false;
    if (!s->add_eos) s->add_eos = false;
  }
}

Status read_vocab(const Reader& r, const json& model, TokenizerData* d, std::map<int64_t, std::string>* by_id) {
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return r.fail("model.vocab", "is missing or not an object; expected a map of piece to id");
  for (const auto& [piece, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      return r.fail("model.vocab", "maps '" + cut(piece) + "' to " + id.dump() + "; expected a token id");
    (*by_id)[id.get<int64_t>()] = piece;
  }
  return Status::ok();
}

Status read_merges(const Reader& r, const json& model, bool byte_level, TokenizerData* d) {
  if (!model.contains("merges") || (model["merges"].is_array() && model["merges"].empty())) {
    if (byte_level) return r.fail("model.merges", "is missing or empty; a byte-level BPE needs its merges");
    return Status::ok();
  }
  const json& merges = model["merges"];
  if (!merges.is_array()) return r.fail("model.merges", "is " + std::string(merges.type_name()) + "; expected an array");
  d->merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos)
        return r.fail("model.merges", "element " + std::to_string(i) + " ('" + cut(s) + "') has no space; expected \"left right\"");
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      return r.fail("model.merges", "element " + std::to_string(i) + " is " + cut(m.dump()) +
                                        "; expected \"left right\" or [left, right]");
    }
    // GGUF keeps merges as "left right": a space inside a part cannot be told apart.
    if (byte_level && (left.find(' ') != std::string::npos || right.empty()))
      return r.fail("model.merges", "element " + std::to_string(i) + " has a space inside a part; cannot be kept as \"left right\"");
    d->merges.push_back(left + " " + right);
  }
  return Status::ok();
}

// The ByteLevel / Split pre-tokenizers → a tokenizer.ggml.pre name.
Expected<std::string> read_pre(const Reader& r, const json& j) {
  const auto pres = flatten(member(j, "pre_tokenizer"), "pretokenizers");
  const json* split = find_type(pres, "Split");
  const json* bl = find_type(pres, "ByteLevel");
  if (bl && bl->value("add_prefix_space", false))
    return r.refuse("pre_tokenizer", "ByteLevel has add_prefix_space = true; not supported (llama.cpp adds no prefix)");
  if (split) {
    std::string regex;
    if (split->contains("pattern") && (*split)["pattern"].is_object())
      regex = (*split)["pattern"].value("Regex", (*split)["pattern"].value("String", ""));
    for (PreTokenizer p : {PreTokenizer::llama3, PreTokenizer::gpt2})
      if (regex == pre_tokenizer_regex(p)) return std::string(pre_tokenizer_name(p));
    return r.refuse("pre_tokenizer", "splits on the regex '" + cut(regex) + "'; supported: the gpt-2 and llama-bpe regexes (" +
                                         std::string(supported_pre_tokenizers()) + ")");
  }
  if (bl && bl->value("use_regex", true)) return std::string("gpt-2");
  return r.refuse("pre_tokenizer", "has no Split or regex ByteLevel; supported: the gpt-2 and llama-bpe pre-tokenizers");
}

// SentencePiece-style: spaces become ▁ (normalizer Replace or Metaspace);
// returns whether a ▁ is prepended (the space prefix), or an error.
Expected<bool> read_spm_spaces(const Reader& r, const json& j) {
  const auto norms = flatten(member(j, "normalizer"), "normalizers");
  bool replace = false, prepend = false;
  for (const json* n : norms) {
    const std::string type = n->value("type", "");
    if (type == "Replace" && n->contains("pattern") && (*n)["pattern"].value("String", "") == " " &&
        n->value("content", "") == kSpaceMark)
      replace = true;
    else if (type == "Prepend" && n->value("prepend", "") == kSpaceMark)
      prepend = true;
    else
      return r.refuse("normalizer", "has a " + type + " step; supported: Prepend \"▁\" and Replace \" \" → \"▁\"");
  }
  if (replace) return prepend;
  const auto pres = flatten(member(j, "pre_tokenizer"), "pretokenizers");
  if (const json* m = find_type(pres, "Metaspace")) {
    const std::string scheme = m->value("prepend_scheme", m->value("add_prefix_space", true) ? "always" : "never");
    return scheme != "never";
  }
  return r.refuse("normalizer", "does not turn spaces into ▁ and there is no ByteLevel pre-tokenizer; supported: "
                                "SentencePiece-style (▁) and byte-level BPE tokenizer.json files");
}
}  // namespace

static Expected<TokenizerData> read_tokenizer_json(const Reader& r) {
  const std::string& path = r.path();
  TS_ASSIGN_OR_RETURN(const json j, r.parse());
  if (!j.contains("model") || !j["model"].is_object()) return r.fail("model", "is missing; expected the tokenizer model");
  const json& model = j["model"];
  const std::string type = model.value("type", "BPE");
  if (type != "BPE") return r.refuse("model.type", "is '" + type + "'; expected 'BPE' (byte-level or SentencePiece-style)");

  const bool byte_level = find_type(flatten(member(j, "pre_tokenizer"), "pretokenizers"), "ByteLevel") != nullptr;
  TokenizerData d;
  d.model = byte_level ? "gpt2" : "llama";
  if (byte_level) {
    if (j.contains("normalizer") && !j["normalizer"].is_null())
      return r.refuse("normalizer", "is set on a byte-level tokenizer; not supported");
    TS_ASSIGN_OR_RETURN(d.pre, read_pre(r, j));
    d.add_space_prefix = false;
  } else {
    TS_ASSIGN_OR_RETURN(d.add_space_prefix, read_spm_spaces(r, j));
  }

  std::map<int64_t, std::string> by_id;
  TS_TRY(read_vocab(r, model, &d, &by_id));
  struct Added {
    std::string content;
    bool special;
  };
  std::map<int64_t, Added> added;
  if (j.contains("added_tokens")) {
    if (!j["added_tokens"].is_array()) return r.fail("added_tokens", "is not an array");
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0 ||
          a["id"].get<int64_t>() > INT32_MAX || !a.contains("content") || !a["content"].is_string())
        return r.fail("added_tokens", "has an entry " + cut(a.dump()) + "; expected {\"id\": N, \"content\": \"...\"}");
      added[a["id"].get<int64_t>()] = {a["content"].get<std::string>(), a.value("special", false)};
    }
  }
  int64_t max_id = -1;
  if (!by_id.empty()) max_id = by_id.rbegin()->first;
  if (!added.empty()) max_id = std::max(max_id, added.rbegin()->first);
  if (max_id < 0) return r.fail("model.vocab", "is empty; expected at least one token");
  // Unnamed ids below the largest become [PADn] pieces; a few are normal, billions are a broken file.
  size_t named = by_id.size();
  for (const auto& [id, a] : added) named += !by_id.count(id);
  constexpr int64_t kMaxUnnamedIds = 1 << 16;
  if (max_id + 1 - (int64_t)named > kMaxUnnamedIds)
    return r.fail("model.vocab", "and added_tokens name " + std::to_string(named) + " ids but the largest is " +
                                     std::to_string(max_id) + "; expected at most " + std::to_string(kMaxUnnamedIds) +
                                     " unnamed ids below it");

  const size_t n = (size_t)max_id + 1;
  const bool byte_fallback = model.value("byte_fallback", false);
  const std::string unk_piece = model.contains("unk_token") && model["unk_token"].is_string() ? model["unk_token"].get<std::string>() : "";
  d.tokens.resize(n);
  d.types.assign(n, TokenType::normal);
  std::vector<bool> present(n, false);
  for (const auto& [id, piece] : by_id) {
    d.tokens[(size_t)id] = piece;
    present[(size_t)id] = true;
    if (!byte_level && byte_fallback && byte_piece_value(piece) >= 0) d.types[(size_t)id] = TokenType::byte;
  }
  for (const auto& [id, a] : added) {
    if (present[(size_t)id] && d.tokens[(size_t)id] != a.content)
      return r.fail("added_tokens", "gives id " + std::to_string(id) + " to '" + cut(a.content) + "' but model.vocab has '" +
                                        cut(d.tokens[(size_t)id]) + "' there");
    d.tokens[(size_t)id] = a.content;
    present[(size_t)id] = true;
    d.types[(size_t)id] = a.special ? TokenType::control : TokenType::user_defined;
  }
  for (size_t id = 0; id < n; ++id) {
    if (present[id]) continue;
    d.tokens[id] = "[PAD" + std::to_string(id) + "]";  // llama.cpp's converter fills holes so
    d.types[id] = TokenType::unused;
  }
  std::unordered_map<std::string, int32_t> index;
  for (size_t id = 0; id < n; ++id) index.emplace(d.tokens[id], (int32_t)id);
  auto id_of = [&](const std::optional<std::string>& piece) -> int32_t {
    if (!piece) return -1;
    const auto it = index.find(*piece);
    return it == index.end() ? -1 : it->second;
  };
  if (!unk_piece.empty() && id_of(unk_piece) >= 0) d.types[(size_t)id_of(unk_piece)] = TokenType::unknown;

  TS_TRY(read_merges(r, model, byte_level, &d));
  if (!byte_level) {
    // SentencePiece merges by score: rebuild one from the merge order, so
    // that the earliest merge's result scores highest, as in the .model file.
    d.scores.assign(n, 0.0f);
    std::vector<bool> scored(n, false);
    for (size_t rank = 0; rank < d.merges.size(); ++rank) {
      const std::string& m = d.merges[rank];
      const size_t sp = m.find(' ', 1);
      const int32_t id = id_of(m.substr(0, sp) + m.substr(sp + 1));
      if (id >= 0 && !scored[(size_t)id]) {
        d.scores[(size_t)id] = -(float)(rank + 1);
        scored[(size_t)id] = true;
      }
    }
    d.merges.clear();  // a "llama" vocabulary carries scores, not merges
  }

  // Special ids: tokenizer_config.json, then the post-processor, then names.
  TS_ASSIGN_OR_RETURN(Specials s, read_config(path));
  if (j.contains("post_processor") && !j["post_processor"].is_null()) {
    Specials t;
    read_template(j["post_processor"], &t);
    if (!s.bos) s.bos = t.bos;
    if (!s.eos) s.eos = t.eos;
    if (!s.add_bos) s.add_bos = t.add_bos;
    if (!s.add_eos) s.add_eos = t.add_eos;
  }
  auto first_named = [&](std::initializer_list<const char*> names) -> std::optional<std::string> {
    for (const char* nm : names) {
      const auto it = index.find(nm);
      if (it != index.end() && d.types[(size_t)it->second] == TokenType::control) return std::string(nm);
    }
    return std::nullopt;
  };
  if (!s.bos) s.bos = first_named({"<s>", "<|begin_of_text|>", "<|endoftext|>"});
  if (!s.eos) s.eos = first_named({"</s>", "<|end_of_text|>", "<|endoftext|>"});
  if (!s.unk && !unk_piece.empty()) s.unk = unk_piece;
  // llama.cpp's defaults: SPM bos 1, eos 2, unk 0; BPE none of them.
  d.bos_id = s.bos ? id_of(s.bos) : (byte_level ? -1 : 1);
  d.eos_id = s.eos ? id_of(s.eos) : (byte_level ? -1 : 2);
  d.unk_id = s.unk ? id_of(s.unk) : (byte_level ? -1 : 0);
  d.pad_id = s.pad ? id_of(s.pad) : -1;
  for (const auto& [what, piece, id] : {std::tuple<const char*, std::optional<std::string>, int32_t>{"bos_token", s.bos, d.bos_id},
                                        {"eos_token", s.eos, d.eos_id}, {"unk_token", s.unk, d.unk_id}, {"pad_token", s.pad, d.pad_id}}) {
    if (piece && id < 0) return r.fail(what, "is '" + cut(*piece) + "', which is not a token of this vocabulary");
  }
  // llama.cpp: SPM and llama-bpe add BOS, gpt-2 does not; neither adds EOS.
  d.add_bos = s.add_bos.value_or(!byte_level || d.pre == "llama-bpe");
  d.add_eos = s.add_eos.value_or(false);
  if (d.add_bos && d.bos_id < 0) d.add_bos = false;
  return d;
}

Expected<TokenizerData> read_hf_tokenizer_json(const std::string& path) { return read_hf_tokenizer_json_text(path, std::nullopt); }

Expected<TokenizerData> read_hf_tokenizer_json_text(const std::string& path, std::optional<std::string_view> text) {
  // A field of an unexpected JSON type (nlohmann throws) is an input error too.
  try {
    return read_tokenizer_json(text ? Reader(path, *text) : Reader(path));
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(path + ": has a field of an unexpected type (" + std::string(e.what()) +
                            "); expected a Hugging Face tokenizer.json");
  }
}

}  // namespace tessera
