#pragma once
// The lowered, device-independent form of one step of a model: an ordered
// list of dispatches over planned buffers. graph/ produces it; a Device
// compiles it once per shape bucket into an Executable and replays it.
// Every byte a step touches is in a PlanBuffer sized before the first step.
#include <cstdint>
#include <string>
#include <vector>

#include "core/hal/buffer.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "core/weight_layout.h"

namespace tessera {

// Per-step host arrays; each has a PlanBuffer of role step_input.
enum class StepField : uint8_t {
  none,
  token_ids,     // i32[T]
  positions,     // i32[T]  position of each token in its sequence
  slot_mapping,  // i32[T]  KV slot each token's K/V are written to
  query_start,   // i32[S+1] first token of each sequence in the step
  seq_lens,      // i32[S]  context length of each sequence after this step
  block_tables,  // i32[S * max_blocks_per_seq]
  logit_rows,    // i32[R]  tokens whose logits the step returns
};
const char* to_string(StepField f);

enum class BufferRole : uint8_t {
  weight,      // bound by the caller: one weight tensor
  kv_pool,     // bound by the caller: one layer's K or V pool, shared by all plans
  arena,       // allocated by compile: every activation, at planned offsets
  step_input,  // allocated by compile, filled from StepArgs each step
  transfer,    // bound by the caller: a value another part of the step computed (on this device or another)
};
// Roles whose buffers the caller binds at compile; compile allocates the others.
inline bool is_bound(BufferRole r) { return r == BufferRole::weight || r == BufferRole::kv_pool || r == BufferRole::transfer; }

struct PlanBuffer {
  std::string name;
  BufferRole role = BufferRole::arena;
  uint64_t bytes = 0;
  StepField field = StepField::none;
};

// How the outermost dimension of a tensor is resolved when a step runs: the
// plan is sized for its bucket's maximum, a step may use fewer rows.
enum class RowCount : uint8_t { fixed, tokens, logit_rows };

struct PlanTensor {
  uint32_t buffer = 0;
  uint64_t offset = 0;
  TensorDesc desc;  // dim 0 at the bucket's maximum when rows != fixed
  RowCount rows = RowCount::fixed;
  WeightLayout layout = WeightLayout::rows;  // a weight's block order (the IR's {layout=...})
};

struct Dispatch {
  OpKind op;
  OpParams params;
  std::vector<PlanTensor> inputs;
  std::vector<PlanTensor> outputs;
  std::string label;  // the graph node it came from, for profiles and errors
  TileParams tile;    // the tiling pass's choice; empty: the kernel's default
};

// The sizes a plan was compiled for.
struct ShapeBucket {
  int32_t max_tokens = 1;
  int32_t max_seqs = 1;
  int32_t max_logit_rows = 1;
  int32_t max_blocks_per_seq = 1;
};

struct Plan {
  ShapeBucket bucket;
  std::vector<PlanBuffer> buffers;
  std::vector<Dispatch> dispatches;
  PlanTensor logits;  // f32[R, vocab]: outputs[0]
  std::vector<PlanTensor> outputs;  // every value the graph returns, live until the step ends
  uint64_t arena_peak_bytes = 0;
  uint64_t arena_lower_bound_bytes = 0;  // the largest set of simultaneously live activations
};

// Told, on the thread that runs the step, that the step's K and V for the
// tokens it appends are in a KV pool: called once per pool the step writes,
// right after the dispatch that appends to it, with the pool's plan buffer
// name (e.g. "blk.3.k_cache"), while the later layers still compute.
// Prefill/decode disaggregation ships a layer's blocks from here. Optional to
// honour: a backend whose dispatches run later on a device queue does not
// call it (DeviceInfo::notifies_kv_writes says which), and the caller reads
// the pools once the step is done.
struct KvWrittenHook {
  void (*fn)(void* ctx, const char* pool) = nullptr;
  void* ctx = nullptr;
};

// What changes every step. Spans are read during Stream::run only.
struct StepArgs {
  const int32_t* token_ids = nullptr;
  const int32_t* positions = nullptr;
  const int32_t* slot_mapping = nullptr;
  int32_t n_tokens = 0;
  const int32_t* query_start = nullptr;  // n_seqs + 1
  const int32_t* seq_lens = nullptr;     // n_seqs
  const int32_t* block_tables = nullptr; // n_seqs * bucket.max_blocks_per_seq
  int32_t n_seqs = 0;
  const int32_t* logit_rows = nullptr;
  int32_t n_logit_rows = 0;
  KvWrittenHook kv_written;
};

}  // namespace tessera
