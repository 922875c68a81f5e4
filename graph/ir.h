#pragma once
// The graph IR: SSA values with a shape and dtype, nodes with an op kind and
// attributes. Shapes may be symbolic in their outermost dimension (T: the
// tokens of a step, R: the rows whose logits are returned); lowering fixes
// them per shape bucket.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hal/device_id.h"
#include "core/hal/kernel_table.h"
#include "core/hal/plan.h"
#include "core/ops.h"
#include "core/tensor.h"

namespace tessera::graph {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

enum class ValueKind : uint8_t {
  step_input,  // filled from StepArgs every step (token ids, positions, ...)
  weight,      // a model tensor, bound by name at compile time
  kv_pool,     // one layer's K or V pool, bound at compile time, lives across steps
  computed,    // produced by a node
  // Only in the per-device parts lowering cuts a placed graph into
  // (graph/lower.h): a value another part computed, bound like a weight.
  transfer,
  constant,    // data computed once at load from the recipe it records (fold_constants)
};
const char* to_string(ValueKind k);

// The part of a model weight one rank of a tensor-parallel group holds
// (graph/passes/tensor_parallel): a range of its rows (column-parallel
// projections, the vocabulary-parallel classifier) or of its columns
// (row-parallel ones), as shard_range (core/ops.h) cuts them. The runner
// cuts it at load; printed {shard=rows 1/2}.
struct WeightShard {
  enum class Axis : uint8_t { rows, cols };
  Axis axis = Axis::rows;
  int32_t rank = 0;
  int32_t world = 1;
  // A packed tensor's parts along the axis (phi3's attn_qkv: q's, k's and
  // v's rows), each cut on its own; empty: the whole axis is one part.
  std::vector<int64_t> parts;
  // The model tensor it is cut from; empty: the value's own name (a tied
  // classifier is cut from token_embd.weight).
  std::string source;
  // A row-parallel weight whose blocks straddle the ranks' column ranges (a
  // K-quant's 256 columns split at 128): the rank's columns are held
  // dequantized to f32, exactly the values the blocks hold.
  bool widened = false;
};

struct Value {
  std::string name;       // weight/pool name; empty for computed values
  ValueKind kind = ValueKind::computed;
  TensorDesc desc;        // dim 0 is a placeholder when rows != fixed
  RowCount rows = RowCount::fixed;
  StepField field = StepField::none;  // for step inputs
  int32_t producer = -1;  // node index, -1 for non-computed values
  // A kv_append output names the pool it updated: it shares its storage.
  ValueId aliases = kNoValue;
  // A weight made at load by concatenating the rows of these model weights
  // (horizontal fusion); empty for a weight taken from the file as it is.
  std::vector<std::string> packed_from;
  // A constant's recipe: what its bytes are (graph/constants.h makes them).
  std::optional<RopeTableParams> rope_table;
  // The weight's block order, chosen by the repack_weights pass and made
  // once at load (after any packing); printed {layout=...} when not rows.
  WeightLayout layout = WeightLayout::rows;
  std::optional<WeightShard> shard;
};

struct Node {
  OpKind op;
  OpParams params;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::string label;  // e.g. "blk.3.attn_q"
  TileParams tile;    // set by the tiling pass; printed as tile{...}
  // The device that runs the node (cpu:0, vulkan:1), set by the placement
  // pass and printed as @BACKEND:INDEX; empty before placement.
  DeviceId device;
};

class Graph {
 public:
  std::string name = "model";
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> outputs;  // the values a step returns (logits first)

  const Value& value(ValueId id) const { return values[(size_t)id]; }
  Value& value(ValueId id) { return values[(size_t)id]; }
  ValueId add_value(Value v);
};

// What to ask a kernel table about a node: its op, with the dtype of its
// first weight input (the matmul or embedding weight; f32 without one).
OpQuery query_for(const Graph& g, const Node& n);

// rope and rope_kv_append take, after their fixed inputs (2 and 7), at most
// one more: a frequency-factor weight (f32[rot_dims/2], llama3's
// rope_freqs) or a folded rope_table constant (only for a rotation without
// factors or freq_scale). Each returns that input when it is of its kind,
// or kNoValue.
ValueId rope_freq_factors_input(const Graph& g, const Node& n);
ValueId rope_table_input(const Graph& g, const Node& n);

// Drops values nothing defines or reads (left behind by passes that remove
// nodes) and renumbers the rest densely, keeping their order.
void compact_values(Graph& g);

}  // namespace tessera::graph
