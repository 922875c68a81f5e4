#pragma once
// Builds the syntax tree from tokens, with jinja2's grammar and precedence.
#include <memory>
#include <string>

#include "engine/chat/jinja_ast.h"

namespace tessera::chat {

struct ParseResult {
  std::shared_ptr<Program> program;
  std::string error;  // "line N: what" when the template is not valid Jinja
};

ParseResult parse_template(const std::string& source);

}  // namespace tessera::chat
