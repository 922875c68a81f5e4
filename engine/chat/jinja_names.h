#pragma once
// Filter and test names checked when a template is parsed, as jinja2's
// compiler does.
#include <optional>
#include <string>
#include <utility>

#include "engine/chat/jinja_ast.h"

namespace tessera::chat {

// jinja2 refuses a template that names an unknown filter or test ("No
// filter named 'x'.") unless the name sits in an if statement's tests or
// branches, or in a conditional expression, and not inside a loop, macro,
// call, filter, set or with block there (what jinja2 calls a soft frame):
// there the error waits until the filter runs ("No filter named 'x'
// found."), so a template may guard a filter another engine has. Gives
// the first refused name's line and message.
std::optional<std::pair<int, std::string>> find_unknown_filter_or_test(const Program& program);

}  // namespace tessera::chat
