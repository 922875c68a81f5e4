#pragma once
// Reads the textual IR that graph/printer writes back into a Graph. Errors
// name the source, the line and what was expected there. The parser checks
// the syntax and that every referenced value is defined; graph/verifier
// checks the rest (SSA order, shapes, dtypes, aliases, memory).
#include <string>
#include <string_view>

#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

Expected<Graph> parse(std::string_view text, const std::string& source = "<ir>");

}  // namespace tessera::graph
