#pragma once
// Runs a parsed template over its variables, as jinja2's generated code would.
#include <string>

#include "engine/chat/jinja_ast.h"

namespace tessera::chat {

// Throws JinjaError when the template raises or fails.
std::string render_program(const std::shared_ptr<Program>& program, const Value& variables);

}  // namespace tessera::chat
