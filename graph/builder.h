#pragma once
// Builds a Graph op by op, applying each op's shape rule as it goes. The
// first error is kept and returned by finish(), so model builders read as a
// straight line of ops.
#include <string>

#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name);

  // rows: the symbolic outermost dimension (T or R); `width` the rest.
  ValueId step_input(StepField field, RowCount rows, int64_t max_rows_hint = 1);
  ValueId weight(const std::string& name, const TensorDesc& desc);
  ValueId kv_pool(const std::string& name, const TensorDesc& desc);

  ValueId op(OpKind kind, OpParams params, std::vector<ValueId> inputs, const std::string& label);
  // For ops with several outputs (kv_append).
  std::vector<ValueId> op_n(OpKind kind, OpParams params, std::vector<ValueId> inputs, const std::string& label);

  ValueId embedding(ValueId table, ValueId ids, const std::string& label) { return op(OpKind::embedding, NoParams{}, {table, ids}, label); }
  ValueId rms_norm(ValueId x, ValueId w, RmsNormParams p, const std::string& label) { return op(OpKind::rms_norm, p, {x, w}, label); }
  ValueId matmul(ValueId x, ValueId w, const std::string& label) { return op(OpKind::matmul, NoParams{}, {x, w}, label); }
  ValueId rope(ValueId x, ValueId positions, RopeParams p, const std::string& label) { return op(OpKind::rope, p, {x, positions}, label); }
  ValueId silu_mul(ValueId gate, ValueId up, const std::string& label) { return op(OpKind::silu_mul, NoParams{}, {gate, up}, label); }
  ValueId add(ValueId a, ValueId b, const std::string& label) { return op(OpKind::add, NoParams{}, {a, b}, label); }
  ValueId gather_rows(ValueId x, ValueId rows, const std::string& label) { return op(OpKind::gather_rows, NoParams{}, {x, rows}, label); }

  void mark_output(ValueId v);
  Expected<Graph> finish();

 private:
  Graph g_;
  Status first_error_;
};

}  // namespace tessera::graph
