#pragma once
// What a device can run. Placement asks; it never assumes.
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/ops.h"

namespace tessera {

struct OpQuery {
  OpKind op;
  DType dtype = DType::f32;         // activations
  DType weight_dtype = DType::f32;  // matmul / embedding weights
  // rope / rope_kv_append reading a folded cos/sin table (graph constant
  // rope_table) as a trailing input instead of computing cos/sin itself.
  bool rope_table = false;
};

struct KernelChoice {
  bool supported = false;
  std::string kernel;  // e.g. "q8_0_gemv__avx512vnni" when supported
  std::string reason;  // why not, when unsupported
};

class KernelTable {
 public:
  virtual ~KernelTable() = default;
  virtual KernelChoice query(const OpQuery& q) const = 0;
};

}  // namespace tessera
