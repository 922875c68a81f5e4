#include "graph/constants.h"

#include <cmath>
#include <string>

#include "graph/printer.h"
#include "kernels/reference/reference.h"

namespace tessera::graph {

Expected<TensorDesc> constant_desc(const Value& v) {
  const std::string what = "constant '" + v.name + "'";
  if (v.kind != ValueKind::constant) return invalid_argument(what + ": not a constant value");
  if (!v.rope_table) return invalid_argument(what + ": expected a recipe, e.g. {recipe=rope_table, ...}");
  const RopeTableParams& r = *v.rope_table;
  if (r.rot_dims <= 0 || r.rot_dims % 2)
    return invalid_argument(what + ": rot_dims " + std::to_string(r.rot_dims) + "; expected an even number > 0");
  if (r.positions <= 0) return invalid_argument(what + ": positions " + std::to_string(r.positions) + "; expected > 0");
  if (!std::isfinite(r.theta) || r.theta <= 0) return invalid_argument(what + ": theta must be a finite number > 0");
  return TensorDesc::contiguous(DType::f32, Shape{r.positions, r.rot_dims / 2, 2});
}

Status check_constant(const Value& v) {
  TS_ASSIGN_OR_RETURN(TensorDesc want, constant_desc(v));
  Value expected;
  expected.desc = want;
  if (v.rows != RowCount::fixed || v.desc.dtype != want.dtype || !(v.desc.shape == want.shape))
    return invalid_argument("constant '" + v.name + "': declared " + print_type(v) + "; its recipe rope_table makes " +
                            print_type(expected));
  return Status::ok();
}

Expected<std::vector<std::byte>> materialize_constant(const Value& v) {
  TS_TRY(check_constant(v));
  std::vector<std::byte> bytes(v.desc.bytes());
  kernels::reference::rope_table({reinterpret_cast<float*>(bytes.data()), *v.rope_table});
  return bytes;
}

}  // namespace tessera::graph
