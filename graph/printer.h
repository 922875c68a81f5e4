#pragma once
// The textual form of a graph, one node a line:
//   %5 = rms_norm(%3, %4) {eps=1e-05} : f32[T, 64]  # blk.0.attn_norm
// T and R stand for the symbolic token and logit-row dimensions. Floats are
// printed in their shortest exact form, so graph/parser reads back the same
// graph: print(parse(print(g))) == print(g). docs/ir.md describes the syntax.
#include <string>

#include "graph/ir.h"

namespace tessera::graph {

std::string print(const Graph& g);
std::string print_node(const Graph& g, const Node& n);
std::string print_params(const OpParams& p);
std::string print_type(const Value& v);  // e.g. "f32[T, 64]"

}  // namespace tessera::graph
