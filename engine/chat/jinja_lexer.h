#pragma once
// Splits template source into text and tag tokens with jinja2's whitespace
// rules for trim_blocks=True, lstrip_blocks=True and the -/+ modifiers.
#include <string>
#include <vector>

namespace tessera::chat {

struct Token {
  enum class T { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };
  T t;
  std::string text;  // text, name, operator, or the string literal's value
  int line = 1;
};

struct LexResult {
  std::vector<Token> tokens;
  std::string error;  // "line N: what"; empty when the source lexed
};

LexResult lex_template(const std::string& source);

}  // namespace tessera::chat
