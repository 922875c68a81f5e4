#pragma once
// What a device can run. Placement asks; it never assumes.
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "core/weight_layout.h"

namespace tessera {

struct OpQuery {
  OpKind op;
  DType dtype = DType::f32;         // activations
  DType weight_dtype = DType::f32;  // matmul / embedding weights
  // The element type of the KV pools kv_append, rope_kv_append and
  // paged_attention write or read (f32, f16, bf16, q8_0 or fp8_e4m3): a table refuses the
  // types its kernels cannot store or read, never computing in another.
  DType kv_dtype = DType::f32;
  // rope / rope_kv_append reading a folded cos/sin table (graph constant
  // rope_table) as a trailing input instead of computing cos/sin itself.
  bool rope_table = false;
  // rope / rope_kv_append reading per-pair frequency divisors (llama3's
  // rope_freqs.weight) as an extra input.
  bool rope_freq_factors = false;
  // The node's parameters, for tables whose kernels implement only some
  // settings (an attention window or score soft-cap, a RoPE freq_scale): a
  // table must refuse what its kernel would ignore.
  OpParams params = NoParams{};
};

struct KernelChoice {
  bool supported = false;
  std::string kernel;  // e.g. "q8_0_gemv__avx512vnni" when supported
  std::string reason;  // why not, when unsupported
};

// Which block order a device's kernel reads fastest for one matmul-family
// node's weight (the repack_weights pass asks; graph/passes/repack_weights.cpp).
struct LayoutQuery {
  OpKind op;
  DType weight_dtype = DType::f32;
  Shape weight_shape;  // [n, k]
};

class KernelTable {
 public:
  virtual ~KernelTable() = default;
  virtual KernelChoice query(const OpQuery& q) const = 0;
  // The standard layout unless a backend has measured better; whatever it
  // answers must be one its kernels for that op read.
  virtual WeightLayout preferred_weight_layout(const LayoutQuery&) const { return WeightLayout::rows; }
  // Whether its kernel for that op reads a weight in layout l at all (what
  // --weight-layout may ask for where the preference is another), where
  // may_read_reordered_weight (core/ops.h) lets it: as a matmul's weight or
  // an embedding's table (a tied classifier keeps one copy for both).
  virtual bool reads_weight_layout(const LayoutQuery&, WeightLayout l) const { return l == WeightLayout::rows; }
};

}  // namespace tessera
