#pragma once
// The one op set. Every op has a reference kernel (kernels/reference), a
// shape rule (graph/shape_rules), and a printed form (graph/printer).
// Op parameters are named structs; they live here, below graph/, because the
// HAL's Plan (core/hal/plan.h) carries them to the backends.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "core/tile_params.h"

namespace tessera {

enum class OpKind : uint8_t {
  embedding,        // (table[V, D], ids:i32[T]) -> f32[T, D]
  rms_norm,         // (x[T, D], weight[D]) -> [T, D]
  matmul,           // (x[T, K], w[N, K]) -> [T, N]   y = x · wᵀ, w in any weight dtype
  rope,             // (x[T, H*hd], positions:i32[T]) -> [T, H*hd]
  kv_append,        // (k[T, Hkv*hd], v[T, Hkv*hd], slot_mapping:i32[T], k_pool, v_pool) -> writes the pools
  paged_attention,  // (q[T, H*hd], k_pool, v_pool, seq metadata) -> [T, H*hd]
  silu_mul,         // (gate[T, F], up[T, F]) -> silu(gate) * up
  add,              // (a, b) -> a + b
  softmax,          // (x[R, C]) -> softmax over C
  argmax,           // (x[R, C]) -> i32[R]
  gather_rows,      // (x[T, D], rows:i32[S]) -> [S, D]
  // Fused ops, made by graph/passes. Each equals the unfused pattern it
  // replaces, bit for bit on the CPU. A model builder uses matmul_qkv and
  // matmul_silu_mul only where the file stores the weight packed (phi3's
  // attn_qkv and gate/up ffn_up).
  matmul_add,       // (x[T, K], w[N, K], residual[T, N]) -> x · wᵀ + residual
  matmul_silu_mul,  // (x[T, K], w_gate_up[2F, K]) -> silu(x · w_gateᵀ) * (x · w_upᵀ), [T, F]
  matmul_qkv,       // (x[T, K], w_qkv[Nq + 2 Nkv, K]) -> (q[T, Nq], k[T, Nkv], v[T, Nkv])
  rope_kv_append,   // (q, k, v, positions, slot_mapping, k_pool, v_pool) -> (rope(q), k_pool', v_pool'); K roped on the way in
  add_rms_norm,     // (a, b, w[D]) -> (s = a + b, rms_norm(s, w))
  matmul_add_rms_norm,  // (x, w[N, K], residual, norm_w[N]) -> (s = x · wᵀ + residual, rms_norm(s, norm_w))
  // Made by the placement pass: the value on another device (the node's).
  // The runtime moves the bytes between the devices' memories; a device
  // never dispatches it (the CPU can, as a plain copy, for hand-written IR).
  copy,             // (x) -> x
  // Elementwise primitives (models with biases and GELU FFNs use them; llama does not).
  mul,              // (a, b) -> a * b, same shape
  silu,             // (x) -> x * sigmoid(x)
  gelu,             // (x) -> GELU, tanh approximation (ggml's gelu)
  bias_add,         // (x[T, N], b[N]) -> x + b on every row
  // Fused elementwise programs (graph/passes/fuse_elementwise, fuse_matmul_epilogue).
  elementwise,      // (inputs...) -> the ElementwiseProgram's result, one pass over the rows
  matmul_epilogue,  // (x[T, K], w[N, K], extra...) -> program over (x · wᵀ, extra...), applied per output block
  // Ops of the architectures beyond llama (qwen3, gemma2); llama graphs have none.
  head_rms_norm,    // (x[T, H*hd], weight[hd]) -> RMSNorm of each head's hd values (RmsNormParams)
  scale,            // (x) -> x * s (ScaleParams), f32
  softcap,          // (x) -> cap * tanh(x / cap) (SoftcapParams), f32
  // GeGLU as llama.cpp's CPU computes it (ggml_geglu): gelu(gate) * up, the
  // GELU of gate rounded to f16 and read from ggml's f16 table of the tanh
  // approximation (gate <= -10: 0; gate >= 10: gate). gemma2's FFN gating.
  gelu_mul,         // (gate[T, F], up[T, F]) -> gelu_f16(gate) * up
  // Collectives over the ranks of a tensor-parallel model (core/hal/communicator.h),
  // inserted by graph/passes/tensor_parallel; every rank runs the same ones in the same order.
  all_reduce,       // (x[T, D]) -> the sum of every rank's x, f32
  all_gather,       // (x[R, C_rank]) -> [R, total]: the ranks' columns side by side (AllGatherParams), f32
  // A pipeline stage's ends (graph/passes/pipeline_parallel): the rows it
  // hands to the next stage's rank, and those it takes from the previous one.
  send,             // (x[T, D]) -> x, after sending it to rank `peer` (PeerParams), f32
  recv,             // (positions:i32[T]) -> f32[T, cols], received from rank `peer` (PeerParams); positions give the rows
};
inline constexpr int kOpKindCount = 32;

std::string_view name(OpKind op);
std::optional<OpKind> op_from_name(std::string_view name);
// Ops whose inputs 0 and 1 are x[T, K] and a weight w[N, K] (the matmul family).
bool is_matmul_family(OpKind op);
// Whether input i of op may be a weight in a reordered layout
// (core/weight_layout.h): a matmul's weight (input 1) or an embedding's table
// (input 0, a tied classifier). Which layouts a backend reads there is its
// kernel table's answer (KernelTable::reads_weight_layout).
bool may_read_reordered_weight(OpKind op, size_t input);

enum class RopeLayout : uint8_t {
  interleaved,  // llama2.c / GGUF llama: rotate pairs (2i, 2i+1)
  half_split,   // HF / NeoX: rotate (i, i + rot_dims/2)
};

struct NoParams {};

struct RmsNormParams {
  float eps = 1e-5f;
};

struct RopeParams {
  int32_t n_heads = 0;
  int32_t head_dim = 0;
  int32_t rot_dims = 0;  // leading dims of each head that rotate; <= head_dim
  float theta = 10000.0f;
  RopeLayout layout = RopeLayout::interleaved;
  // Linear position scaling ({arch}.rope.scaling.type linear: 1/factor): the
  // angle is freq_scale * position * theta^(-2i/rot_dims). 1 = none. A rope
  // may also read per-pair frequency divisors as an extra input (llama3's
  // rope_freqs.weight, [rot_dims/2] f32): the angle of pair i is divided by
  // factor[i], as llama.cpp does.
  float freq_scale = 1.0f;
};

// A RoPE cos/sin table (graph constant recipe rope_table): row p holds, for
// each rotated pair i < rot_dims/2, cos and sin of p * theta^(-2i/rot_dims),
// computed with exactly the f32 arithmetic the on-the-fly kernels use. The
// pairing (layout) and head count do not enter it, so one table serves them all.
struct RopeTableParams {
  int32_t rot_dims = 0;
  float theta = 10000.0f;
  int32_t positions = 0;  // rows: positions 0 .. positions-1
};

// Paged KV: a pool holds num_blocks * block_size token slots, each
// n_kv_heads * head_dim values. slot = block_id * block_size + offset.
// A slot mapping entry that writes no KV row: a token that pads a step to
// its bucket (core/hal/step_padding.h), as vLLM's PAD_SLOT_ID.
inline constexpr int32_t kNoSlot = -1;

struct KvCacheParams {
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t block_size = 16;
};

struct AttentionParams {
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;  // n_heads % n_kv_heads == 0 (grouped-query)
  int32_t head_dim = 0;
  int32_t block_size = 16;
  float scale = 0.0f;  // 0 means 1/sqrt(head_dim)
  bool causal = true;
  // Sliding window: query position p attends to key positions j with
  // p - j < window (llama.cpp's standard SWA mask); 0 = no window.
  int32_t window = 0;
  // Soft-capped scores: s = softcap * tanh(s / softcap) after the scale,
  // before the softmax (gemma2's attn_logit_softcapping); 0 = none.
  float softcap = 0.0f;
};

// scale: y = x * scale.
struct ScaleParams {
  float scale = 1.0f;
};

// softcap: y = cap * tanh(x / cap), cap > 0.
struct SoftcapParams {
  float cap = 0.0f;
};

// all_gather: `total` columns split among `world` ranks as shard_range
// gives them; each rank holds its range.
struct AllGatherParams {
  int32_t total = 0;
  int32_t world = 1;
};

// send and recv: the other rank; recv's row width.
struct PeerParams {
  int32_t peer = 0;
  int32_t cols = 0;
};

// The part [begin, end) of `total` rows or columns rank `rank` of `world`
// holds: as even as integers allow, earlier ranks never larger.
struct ShardRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
inline ShardRange shard_range(int64_t total, int world, int rank) {
  return {total * rank / world, total * (rank + 1) / world};
}

// matmul_qkv: how the packed weight's rows split into q, k and v.
struct QkvSplitParams {
  int32_t q_rows = 0;
  int32_t kv_rows = 0;
};

// rope_kv_append: q is rotated with `rope`; k with the same rope over
// kv.n_kv_heads heads, then appended with v to the pools.
struct RopeKvAppendParams {
  RopeParams rope;
  KvCacheParams kv;
};

// A straight-line program of elementwise instructions over [rows, cols]
// tensors: the params of `elementwise` and `matmul_epilogue`. Registers
// 0 .. n_inputs-1 are the inputs (a0, a1, ...; for matmul_epilogue a0 is the
// matmul product and a1... are the node's inputs after w), register
// n_inputs + i is instruction i's result (t0, t1, ...), and the last
// instruction's result is the output. Each instruction computes exactly what
// the standalone op of the same name does, so a fused program equals the
// unfused chain bit for bit.
enum class EwOp : uint8_t {
  add,       // a + b
  mul,       // a * b
  silu,      // silu(a); b unused
  gelu,      // gelu(a); b unused
  bias_add,  // a + b, b one row [cols] repeated over the rows (an input register)
  gelu_f16,  // gelu_mul's GELU: ggml's f16-table tanh GELU of a; b unused
};
inline constexpr int kEwOpCount = 6;
inline constexpr int kEwMaxInstrs = 8;
inline constexpr int kEwMaxInputs = kEwMaxInstrs + 1;  // a chain of binary ops reads at most one more input than it has ops
std::string_view name(EwOp op);
std::optional<EwOp> ew_op_from_name(std::string_view name);
bool is_unary(EwOp op);

struct EwInstr {
  EwOp op = EwOp::add;
  uint8_t a = 0, b = 0;  // registers
  bool operator==(const EwInstr&) const = default;
};

struct ElementwiseProgram {
  uint8_t n_inputs = 0;
  uint8_t n_instrs = 0;
  EwInstr instrs[kEwMaxInstrs] = {};
  uint8_t output_register() const { return (uint8_t)(n_inputs + n_instrs - 1); }
  // Whether input register r is read as a bias row (one row repeated over the rows) rather than a full tensor.
  bool is_row_input(int r) const {
    for (int i = 0; i < n_instrs; ++i)
      if (instrs[i].op == EwOp::bias_add && instrs[i].b == r) return true;
    return false;
  }
  bool operator==(const ElementwiseProgram&) const = default;
};

using OpParams = std::variant<NoParams, RmsNormParams, RopeParams, KvCacheParams, AttentionParams, QkvSplitParams,
                              RopeKvAppendParams, ElementwiseProgram, ScaleParams, SoftcapParams, AllGatherParams, PeerParams>;

// The input a node's output shares storage with (it updates that buffer in
// place, e.g. kv_append's pools), or -1.
int aliased_input(OpKind op, int output_index);
// Ops whose effect is a write to a bound buffer: dead-code elimination keeps them.
bool has_side_effects(OpKind op);

}  // namespace tessera
