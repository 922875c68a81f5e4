// tessera tokenize: the ids a model's tokenizer (or a tokenizer file alone)
// gives a text, as llama.cpp's llama-tokenize does, optionally with pieces.
#include <CLI/CLI.hpp>
#include <cstdio>

#include <tessera/model_file.h>

#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct TokenizeFlags {
  std::string model, tokenizer, prompt;
  bool no_bos = false, pieces = false, parse_special = false;
} f;

// A piece's bytes made visible: printable ASCII and whole UTF-8 characters
// as they are, quotes and backslashes escaped, anything else as \xNN (a
// byte-fallback token is often a lone byte of a longer character).
std::string visible(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    for (size_t k = 1; len && k < len; ++k)
      if (i + k >= s.size() || ((unsigned char)s[i + k] & 0xC0) != 0x80) len = 0;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (len == 1 && c >= 0x20 && c < 0x7f) {
      out += (char)c;
    } else if (len > 1) {
      out.append(s, i, len);
      i += len;
      continue;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
    ++i;
  }
  return out + "\"";
}

int tokenize_main() {
  auto tok = TextTokenizer::open({f.model, f.tokenizer});
  if (!tok) return fail(tok.status());
  TokenizeOptions o;
  o.bos = !f.no_bos;
  o.parse_special = f.parse_special;
  const std::vector<int32_t> ids = (*tok)->encode(f.prompt, o);
  if (f.pieces) {
    for (int32_t id : ids) std::printf("%d\t%s\n", id, visible((*tok)->token_bytes(id)).c_str());
    return 0;
  }
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ',';
    line += std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

Subcommand add_tokenize(CLI::App& app) {
  CLI::App* s = app.add_subcommand("tokenize", "print the token ids of a text");
  s->add_option("-m,--model", f.model, "model whose tokenizer to use (GGUF or llama2.c .bin)");
  s->add_option("-z,--tokenizer", f.tokenizer, "tokenizer file: Hugging Face tokenizer.json or llama2.c tokenizer.bin");
  s->add_option("-p,--prompt", f.prompt, "text to tokenize")->required();
  s->add_flag("--no-bos", f.no_bos, "do not add BOS, even if the vocabulary asks for it");
  s->add_flag("--pieces", f.pieces, "print one token a line: id, then its bytes as a quoted string");
  s->add_flag("--parse-special", f.parse_special, "text spelling a control token (</s>, <|eot_id|>) becomes that token");
  return {s, tokenize_main};
}

}  // namespace tessera::cli
