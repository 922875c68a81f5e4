#pragma once
// Pointer-level arguments of every op, shared by kernels/reference (the
// oracle) and kernels/cpu (SIMD). All row-major and contiguous unless a
// stride is given. Kernels neither allocate nor synchronize: scratch comes in
// as `workspace` (its size from the *_workspace_bytes functions) and
// parallelism through the caller's ParallelFor.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/ops.h"
#include "core/weight_layout.h"

namespace tessera::kernels {

struct EmbeddingArgs {
  const void* table = nullptr;  // [vocab, dim] rows of table_dtype
  DType table_dtype = DType::f32;
  int64_t vocab = 0, dim = 0;
  const int32_t* ids = nullptr;  // [n_tokens], each in [0, vocab)
  int64_t n_tokens = 0;
  float* out = nullptr;  // [n_tokens, dim]
  // The table's block order (core/weight_layout.h): a tied classifier's
  // reordered copy is read a row at a time. Results do not depend on it.
  WeightLayout table_layout = WeightLayout::rows;
};

struct RmsNormArgs {
  const float* x = nullptr;       // [rows, dim]
  const float* weight = nullptr;  // [dim]
  float* out = nullptr;           // [rows, dim]; may alias x
  int64_t rows = 0, dim = 0;
  RmsNormParams p;
};

// head_rms_norm: each of the `heads` groups of head_dim values in a row is
// normalized on its own, with the one weight [head_dim].
struct HeadRmsNormArgs {
  const float* x = nullptr;       // [rows, heads * head_dim]
  const float* weight = nullptr;  // [head_dim]
  float* out = nullptr;           // may alias x
  int64_t rows = 0, heads = 0, head_dim = 0;
  RmsNormParams p;
};

// scale: out = x * s; softcap: out = s * tanh(x / s).
struct ScalarOpArgs {
  const float* x = nullptr;
  float* out = nullptr;  // may alias x
  int64_t n = 0;
  float s = 1.0f;
};

struct EpilogueArgs;

// y[m, n] = sum_k x[m, k] * w[n, k]
struct MatmulArgs {
  const float* x = nullptr;  // [m, k]
  const void* w = nullptr;   // [n, k] rows of w_dtype; k a whole number of blocks
  DType w_dtype = DType::f32;
  float* y = nullptr;  // [m, n]
  int64_t m = 0, n = 0, k = 0;
  void* workspace = nullptr;  // matmul_workspace_bytes(w_dtype, m, k) bytes, 64-byte aligned
  TileParams tile;            // blocking; results do not depend on it (each output is one whole-K dot),
                              // except batch_invariant: f32 never takes oneDNN's sgemm (kernels/cpu/matmul.cpp)
  // matmul_epilogue: run over each block of y right after its dots are final
  // (while it is in cache), never as a second pass; null for a plain matmul.
  const EpilogueArgs* epilogue = nullptr;
  // w's block order; rows_x4 for q8_0 / q4_0 only (core/weight_layout.h). Results do not depend on it.
  WeightLayout w_layout = WeightLayout::rows;
};

struct RopeArgs {
  float* x = nullptr;  // [n_tokens, n_heads * head_dim], rotated in place
  const int32_t* positions = nullptr;
  int64_t n_tokens = 0;
  RopeParams p;
  // Optional: the folded cos/sin table (rope_table), [table_rows, rot_dims/2, 2];
  // null computes cos/sin on the fly. Every position must be below table_rows
  // (the caller checks: core/hal/step_check).
  const float* table = nullptr;
  int64_t table_rows = 0;
  // Optional: per-pair frequency divisors [rot_dims/2] (llama3's rope_freqs);
  // the angle of pair i is divided by freq_factors[i]. Never with a table.
  const float* freq_factors = nullptr;
};

// rope_table: out [p.positions, p.rot_dims/2, 2] = (cos, sin) per position and pair.
struct RopeTableArgs {
  float* out = nullptr;
  RopeTableParams p;
};

// Pools are [num_slots, n_kv_heads * head_dim] of kv_dtype (f32, f16, bf16,
// or q8_0 / fp8_e4m3: a row of 34-byte blocks of 32 elements, head_dim a
// multiple of 32, kernels/kv_element.h); slot = block * block_size + offset.
// K and V rows are f32 and are rounded to the pool's type (to nearest even;
// the 8-bit types quantize each block by its amax) as they are stored.
struct KvAppendArgs {
  const float* k = nullptr;  // [n_tokens, n_kv_heads * head_dim]
  const float* v = nullptr;
  // [n_tokens], each in [0, num_slots), or kNoSlot: the token is not written
  // (a token that pads a step to its bucket, core/hal/step_padding.h).
  const int32_t* slot_mapping = nullptr;
  int64_t n_tokens = 0;
  void* k_pool = nullptr;
  void* v_pool = nullptr;
  DType kv_dtype = DType::f32;
  int64_t num_slots = 0;
  KvCacheParams p;
};

// Token t of sequence s (query_start[s] <= t < query_start[s+1]) sits at
// positions[t]; it attends to the sequence's KV positions [0, positions[t]]
// when causal, else [0, seq_lens[s]). KV position j of sequence s lives at
// slot block_tables[s * max_blocks_per_seq + j / block_size] * block_size + j % block_size.
struct AttentionArgs {
  const float* q = nullptr;  // [n_tokens, n_heads * head_dim]
  float* out = nullptr;      // [n_tokens, n_heads * head_dim]
  int64_t n_tokens = 0;
  const void* k_pool = nullptr;  // of kv_dtype, as KvAppendArgs's pools; read as f32
  const void* v_pool = nullptr;
  DType kv_dtype = DType::f32;
  const int32_t* positions = nullptr;
  const int32_t* query_start = nullptr;  // [n_seqs + 1]
  const int32_t* seq_lens = nullptr;     // [n_seqs]
  const int32_t* block_tables = nullptr; // [n_seqs, max_blocks_per_seq]
  int32_t n_seqs = 0;
  int32_t max_blocks_per_seq = 0;
  AttentionParams p;
  void* workspace = nullptr;  // attention_workspace_bytes(...) bytes
};

struct SiluMulArgs {
  const float* gate = nullptr;
  const float* up = nullptr;
  float* out = nullptr;  // may alias gate or up
  int64_t n = 0;
};

// gelu_mul: out = gelu_f16(gate) * up (core/ops.h).
using GeluMulArgs = SiluMulArgs;

struct AddArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  float* out = nullptr;  // may alias a or b
  int64_t n = 0;
};

using MulArgs = AddArgs;  // out = a * b

// silu, gelu: out = f(x)
struct UnaryArgs {
  const float* x = nullptr;
  float* out = nullptr;  // may alias x
  int64_t n = 0;
};

struct BiasAddArgs {
  const float* x = nullptr;     // [rows, cols]
  const float* bias = nullptr;  // [cols], added to every row
  float* out = nullptr;         // [rows, cols]; may alias x
  int64_t rows = 0, cols = 0;
};

struct SoftmaxArgs {
  float* x = nullptr;  // [rows, cols], in place
  int64_t rows = 0, cols = 0;
};

struct ArgmaxArgs {
  const float* x = nullptr;  // [rows, cols]
  int32_t* out = nullptr;    // [rows]; the first index of the maximum
  int64_t rows = 0, cols = 0;
};

struct GatherRowsArgs {
  const std::byte* x = nullptr;  // [n_src_rows, row_bytes]
  const int32_t* rows = nullptr;  // [n_rows], each in [0, n_src_rows)
  std::byte* out = nullptr;       // [n_rows, row_bytes]
  int64_t n_rows = 0, n_src_rows = 0, row_bytes = 0;
};

// Fused ops (graph/passes make them). Each equals its unfused pattern.

// matmul_add: y = x · wᵀ + residual[m, n]; mm.y must not alias residual.
struct MatmulAddArgs {
  MatmulArgs mm;
  const float* residual = nullptr;
};

// matmul_silu_mul: mm.w is [2f, k], the gate's rows then the up's; mm.y is
// scratch [m, 2f] (not read afterwards); out[m, f] = silu(gate) * up.
struct MatmulSiluMulArgs {
  MatmulArgs mm;
  float* out = nullptr;
};

// matmul_qkv: mm.w is [q_rows + 2 kv_rows, k]; mm.y is scratch [m, n] whose
// columns are split into q[m, q_rows], k[m, kv_rows], v[m, kv_rows].
struct MatmulQkvArgs {
  MatmulArgs mm;
  float* q = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  int64_t q_rows = 0, kv_rows = 0;
};

// add_rms_norm / matmul_add_rms_norm: sum = a + b (or the matmul_add), then
// normed = rms_norm(sum, norm_weight) over rows of mm.n (or dim) values.
struct AddRmsNormArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  float* sum = nullptr;  // may alias a or b
  float* normed = nullptr;
  const float* norm_weight = nullptr;
  int64_t rows = 0, dim = 0;
  RmsNormParams p;
};

// elementwise: the program (core/ops.h) over [rows, cols]. A full input is
// [rows, cols]; a row input (the program's bias_add b) is [cols].
struct ElementwiseArgs {
  const ElementwiseProgram* program = nullptr;
  const float* inputs[kEwMaxInputs] = {};
  float* out = nullptr;  // [rows, cols]; may alias a full input
  int64_t rows = 0, cols = 0;
};

// matmul_epilogue: register a0 is the product y[m, n]; inputs[1..] are the
// extra inputs ([m, n], or [n] for a bias row); inputs[0] is ignored. None
// may alias y.
struct EpilogueArgs {
  const ElementwiseProgram* program = nullptr;
  const float* inputs[kEwMaxInputs] = {};
};

struct MatmulEpilogueArgs {
  MatmulArgs mm;  // mm.epilogue is set by the kernel to &epilogue
  EpilogueArgs epilogue;
};

// rope_kv_append: k is rotated into k_rot (scratch, [n_tokens, kv width]) and
// appended with v to the pools, then q is rotated into q_out, which may
// alias q (or k or v: they are consumed first).
struct RopeKvAppendArgs {
  const float* q = nullptr;
  float* q_out = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* k_rot = nullptr;
  const int32_t* positions = nullptr;
  const int32_t* slot_mapping = nullptr;
  int64_t n_tokens = 0;
  void* k_pool = nullptr;  // of kv_dtype, as KvAppendArgs's pools
  void* v_pool = nullptr;
  DType kv_dtype = DType::f32;
  int64_t num_slots = 0;
  RopeKvAppendParams p;
  const float* table = nullptr;  // optional, as RopeArgs::table
  int64_t table_rows = 0;
  const float* freq_factors = nullptr;  // optional, as RopeArgs::freq_factors
};

}  // namespace tessera::kernels
