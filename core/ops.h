#pragma once
// The one op set. Every op has a reference kernel (kernels/reference), a
// shape rule (graph/shape_rules), and a printed form (graph/printer).
// Op parameters are named structs; they live here, below graph/, because the
// HAL's Plan (core/hal/plan.h) carries them to the backends.
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
  // Fused ops, made by graph/passes (never by a model builder). Each equals
  // the unfused pattern it replaces, bit for bit on the CPU.
  matmul_add,       // (x[T, K], w[N, K], residual[T, N]) -> x · wᵀ + residual
  matmul_silu_mul,  // (x[T, K], w_gate_up[2F, K]) -> silu(x · w_gateᵀ) * (x · w_upᵀ), [T, F]
  matmul_qkv,       // (x[T, K], w_qkv[Nq + 2 Nkv, K]) -> (q[T, Nq], k[T, Nkv], v[T, Nkv])
  rope_kv_append,   // (q, k, v, positions, slot_mapping, k_pool, v_pool) -> (rope(q), k_pool', v_pool'); K roped on the way in
  add_rms_norm,     // (a, b, w[D]) -> (s = a + b, rms_norm(s, w))
  matmul_add_rms_norm,  // (x, w[N, K], residual, norm_w[N]) -> (s = x · wᵀ + residual, rms_norm(s, norm_w))
};
inline constexpr int kOpKindCount = 17;

std::string_view name(OpKind op);
std::optional<OpKind> op_from_name(std::string_view name);

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
};

// Paged KV: a pool holds num_blocks * block_size token slots, each
// n_kv_heads * head_dim values. slot = block_id * block_size + offset.
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
};

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

using OpParams = std::variant<NoParams, RmsNormParams, RopeParams, KvCacheParams, AttentionParams, QkvSplitParams,
                              RopeKvAppendParams>;

// The input a node's output shares storage with (it updates that buffer in
// place, e.g. kv_append's pools), or -1.
int aliased_input(OpKind op, int output_index);
// Ops whose effect is a write to a bound buffer: dead-code elimination keeps them.
bool has_side_effects(OpKind op);

}  // namespace tessera
