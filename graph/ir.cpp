#include "graph/ir.h"

namespace tessera::graph {

const char* to_string(ValueKind k) {
  switch (k) {
    case ValueKind::step_input: return "input";
    case ValueKind::weight: return "weight";
    case ValueKind::kv_pool: return "kv_pool";
    case ValueKind::computed: return "computed";
  }
  return "?";
}

ValueId Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return (ValueId)values.size() - 1;
}

}  // namespace tessera::graph
