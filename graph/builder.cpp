#include "graph/builder.h"

#include "graph/shape_rules.h"

namespace tessera::graph {

GraphBuilder::GraphBuilder(std::string name) { g_.name = std::move(name); }

ValueId GraphBuilder::step_input(StepField field, RowCount rows, int64_t max_rows_hint) {
  Value v;
  v.kind = ValueKind::step_input;
  v.field = field;
  v.rows = rows;
  v.name = to_string(field);
  v.desc = TensorDesc::contiguous(DType::i32, Shape{max_rows_hint});
  return g_.add_value(std::move(v));
}

ValueId GraphBuilder::weight(const std::string& name, const TensorDesc& desc) {
  Value v;
  v.kind = ValueKind::weight;
  v.name = name;
  v.desc = desc;
  return g_.add_value(std::move(v));
}

ValueId GraphBuilder::kv_pool(const std::string& name, const TensorDesc& desc) {
  Value v;
  v.kind = ValueKind::kv_pool;
  v.name = name;
  v.desc = desc;
  return g_.add_value(std::move(v));
}

std::vector<ValueId> GraphBuilder::op_n(OpKind kind, OpParams params, std::vector<ValueId> inputs,
                                        const std::string& label) {
  if (!first_error_.is_ok()) return {};
  for (ValueId id : inputs) {
    if (id < 0 || id >= (ValueId)g_.values.size()) {
      first_error_ = internal_error(label + ": input of " + std::string(name(kind)) + " is not a value");
      return {};
    }
  }
  auto outs = infer_outputs(g_, kind, params, inputs);
  if (!outs) {
    first_error_ = outs.status().with_context(label);
    return {};
  }
  Node n{kind, params, std::move(inputs), {}, label};
  const int32_t node_index = (int32_t)g_.nodes.size();
  for (size_t i = 0; i < outs->size(); ++i) {
    Value v;
    v.kind = ValueKind::computed;
    v.desc = (*outs)[i].desc;
    v.rows = (*outs)[i].rows;
    v.producer = node_index;
    if (const int a = aliased_input(kind, (int)i); a >= 0) v.aliases = n.inputs[(size_t)a];
    n.outputs.push_back(g_.add_value(std::move(v)));
  }
  g_.nodes.push_back(std::move(n));
  return g_.nodes.back().outputs;
}

ValueId GraphBuilder::op(OpKind kind, OpParams params, std::vector<ValueId> inputs, const std::string& label) {
  auto outs = op_n(kind, std::move(params), std::move(inputs), label);
  return outs.empty() ? kNoValue : outs[0];
}

void GraphBuilder::mark_output(ValueId v) {
  if (v != kNoValue) g_.outputs.push_back(v);
}

Expected<Graph> GraphBuilder::finish() {
  if (!first_error_.is_ok()) return first_error_;
  if (g_.outputs.empty()) return internal_error(g_.name + ": graph has no outputs");
  return std::move(g_);
}

}  // namespace tessera::graph
