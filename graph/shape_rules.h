#pragma once
// The shape rule of every op: output descriptors from input descriptors and
// params, or an error naming what does not fit.
#include <vector>

#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

struct InferredOutput {
  TensorDesc desc;
  RowCount rows = RowCount::fixed;
};

Expected<std::vector<InferredOutput>> infer_outputs(const Graph& g, OpKind op, const OpParams& params,
                                                    const std::vector<ValueId>& inputs);

}  // namespace tessera::graph
