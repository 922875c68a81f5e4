#pragma once
// The one op set. Every op has a reference kernel (kernels/reference), a
// shape rule (graph/shape_rules), and a printed form (graph/printer).
// Op parameters are named structs; they live here, below graph/, because the
// HAL's Plan (core/hal/plan.h) carries them to the backends.
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

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
};
inline constexpr int kOpKindCount = 11;

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

using OpParams = std::variant<NoParams, RmsNormParams, RopeParams, KvCacheParams, AttentionParams>;

}  // namespace tessera
