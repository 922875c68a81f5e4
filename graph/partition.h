#pragma once
// A placed graph cut into the parts one device runs back to back: where the
// device changes along the schedule, a new part starts. Each part is a graph
// of its own that its device lowers and compiles like any other; what a part
// reads from an earlier one enters it as a `transfer` value (a buffer the
// runtime binds and fills), and what later parts read from it is among its
// outputs. Copies (placement's `copy` nodes) are not in any part: a copy's
// value is read in the later part straight from where its source was made.
// An unplaced graph, or one on a single device, is one part.
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

struct GraphPart {
  DeviceId device;  // its nodes' device; empty in an unplaced graph
  Graph graph;         // its own value numbering
  // A transfer value of this part and where its bytes come from: an output
  // of part `src_part` (a value id in that part's graph).
  struct Input {
    ValueId value = kNoValue;
    int src_part = -1;
    ValueId src_value = kNoValue;
  };
  std::vector<Input> inputs;
  // For each of the whole graph's outputs (logits first): its index in this
  // part's outputs, or -1 when another part makes it.
  std::vector<int> returns;
  // The step's logits are this part's (its outputs[0]: exported first).
  bool has_logits() const { return !returns.empty() && returns[0] >= 0; }
};

Expected<std::vector<GraphPart>> partition_by_device(const Graph& g);

}  // namespace tessera::graph
