#include "engine/bench/op_table.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/half.h"
#include "core/quant.h"
#include "engine/bench/matmul_roofs.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kv_element.h"

namespace tessera {

namespace {

namespace kc = kernels::cpu;

constexpr int32_t kBlockSize = 16;  // KV positions per block, as the engine's default

Status positive(const char* flag, int64_t v, const char* what) {
  if (v > 0) return Status::ok();
  return invalid_argument(std::string(flag) + ": expected a positive " + what + ", got " + std::to_string(v));
}

float* f32(OpTensors t, size_t i) { return reinterpret_cast<float*>(t[i]); }
int32_t* i32(OpTensors t, size_t i) { return reinterpret_cast<int32_t*>(t[i]); }

void fill_uniform(std::byte* p, uint64_t bytes, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto* f = reinterpret_cast<float*>(p);
  for (uint64_t i = 0; i < bytes / 4; ++i) f[i] = u(gen);
}

// A pool of `elems` uniform values in [-1, 1), held as kv_dtype (f32, f16,
// bf16, or q8_0 / fp8_e4m3 quantized a 32-element block at a time).
void fill_uniform_pool(std::byte* p, uint64_t elems, DType kv_dtype, std::mt19937& gen) {
  if (kv_dtype == DType::f32) return fill_uniform(p, elems * 4, gen);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  float block[kernels::kKvBlock];
  for (uint64_t i = 0; i < elems; i += kernels::kKvBlock) {
    for (float& x : block) x = u(gen);
    kernels::store_kv_row(p, kv_dtype, (int64_t)i, block, std::min<int64_t>(kernels::kKvBlock, (int64_t)(elems - i)));
  }
}

// The KV pool types the CPU's kv_append and attention take; the 8-bit ones in blocks of 32 of a head.
Status check_kv_dtype(const OpShape& s) {
  const DType t = s.kv_dtype;
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16 && !kernels::is_kv_block_type(t))
    return invalid_argument("--kv-type: the CPU's KV pools are f32, f16, bf16, q8_0 or fp8_e4m3, not " + std::string(name(t)));
  if (kernels::is_kv_block_type(t) && s.head_dim % kernels::kKvBlock != 0)
    return invalid_argument("--kv-type " + std::string(name(t)) + ": --head-dim " + std::to_string(s.head_dim) +
                            " is not a multiple of 32 (the block of " + std::string(name(t)) + " KV pools)");
  return Status::ok();
}

// ---- row ops over n rows of k: rms_norm, add, silu_mul, softmax, argmax

Status check_rows(const OpShape& s) {
  TS_TRY(positive("--n", s.n, "number of rows"));
  return positive("--k", s.k, "row width");
}
double elems(const OpShape& s) { return (double)s.n * (double)s.k; }
uint64_t row_bytes(const OpShape& s) { return (uint64_t)(s.n * s.k) * 4; }
size_t no_workspace(const OpShape&, int) { return 0; }

// Each row op's cost: FLOPs per element as its formula has them (exp counted as one).
OpCostFigures rows_cost(const OpShape& s, double flops_per_elem, double tensors_moved, const char* kernel) {
  return {flops_per_elem * elems(s), tensors_moved * (double)row_bytes(s), ComputeDtype::f32_fma, kernel};
}

// ---- matmul: y[n, m] = x[n, k] · w[m, k]ᵀ (kernels::MatmulArgs calls n rows of x `m`, m outputs `n`)

Status check_matmul(const OpShape& s) {
  TS_TRY(positive("--m", s.m, "number of weight rows"));
  TS_TRY(positive("--k", s.k, "number of inputs"));
  TS_TRY(positive("--n", s.n, "number of tokens"));
  if (!kc::matmul_supports(s.dtype))
    return invalid_argument("--type: the CPU has no matmul kernel for " + std::string(name(s.dtype)) + " weights");
  if (!is_whole_blocks(s.dtype, s.k))
    return invalid_argument("--k: " + std::to_string(s.k) + " is not a multiple of " + std::string(name(s.dtype)) +
                            "'s block of " + std::to_string(traits(s.dtype).block_elems));
  return Status::ok();
}

OpCostFigures matmul_cost(const OpShape& s) {
  return {2.0 * (double)s.n * (double)s.m * (double)s.k,
          (double)bytes_for(s.dtype, s.m * s.k) + 4.0 * (double)(s.n * s.k + s.n * s.m),
          kc::matmul_compute_dtype(s.dtype, s.n), kc::matmul_kernel_name(s.dtype, s.n, s.batch_invariant)};
}

kernels::MatmulArgs matmul_args(const OpShape& s, OpTensors t, void* ws) {
  kernels::MatmulArgs a;
  a.x = f32(t, 1);
  a.w = t[0];
  a.w_dtype = s.dtype;
  a.y = f32(t, 2);
  a.m = s.n, a.n = s.m, a.k = s.k;
  // The layout a model's weights get on this CPU (the bytes are random, so
  // any order of them is a valid weight of that layout).
  a.w_layout = s.w_layout.value_or(kc::matmul_preferred_layout(s.dtype));
  a.workspace = ws;
  a.tile.batch_invariant = s.batch_invariant;
  return a;
}

// ---- attention: q_len new tokens at the end of a sequence of ctx positions, causal

Status check_attention(const OpShape& s) {
  TS_TRY(positive("--heads", s.heads, "number of query heads"));
  TS_TRY(positive("--kv-heads", s.kv_heads, "number of KV heads"));
  TS_TRY(positive("--head-dim", s.head_dim, "head size"));
  TS_TRY(positive("--ctx", s.ctx, "context length"));
  TS_TRY(positive("--q-len", s.q_len, "number of query tokens"));
  if (s.heads % s.kv_heads != 0)
    return invalid_argument("--kv-heads: " + std::to_string(s.kv_heads) + " does not divide --heads " + std::to_string(s.heads));
  if (s.q_len > s.ctx)
    return invalid_argument("--q-len: " + std::to_string(s.q_len) + " query tokens exceed --ctx " + std::to_string(s.ctx));
  return check_kv_dtype(s);
}

int64_t kv_width(const OpShape& s) { return (int64_t)s.kv_heads * s.head_dim; }
int64_t q_width(const OpShape& s) { return (int64_t)s.heads * s.head_dim; }
int64_t pool_slots(const OpShape& s) { return ((int64_t)s.ctx + kBlockSize - 1) / kBlockSize * kBlockSize; }

// Query i (of q_len) sits at position ctx - q_len + i and attends to every position up to it.
double attended_positions(const OpShape& s) {
  const double q = s.q_len, c = s.ctx;
  return q * c - q * (q - 1) / 2;
}

// Bytes of `rows` pool rows (kv_width elements each) in the bench's KV type.
uint64_t kv_pool_bytes(const OpShape& s, int64_t rows) { return bytes_for(s.kv_dtype, rows * kv_width(s)); }

OpCostFigures attention_cost(const OpShape& s) {
  return {4.0 * s.heads * s.head_dim * attended_positions(s),
          2.0 * (double)kv_pool_bytes(s, s.ctx) + 2.0 * 4.0 * (double)s.q_len * (double)q_width(s),
          ComputeDtype::f32_fma, "paged_attention (" + std::string(name(s.kv_dtype)) + " KV)"};
}

kernels::AttentionArgs attention_args(const OpShape& s, OpTensors t, void* ws) {
  kernels::AttentionArgs a;
  a.q = f32(t, 0);
  a.out = f32(t, 1);
  a.k_pool = t[2];
  a.v_pool = t[3];
  a.kv_dtype = s.kv_dtype;
  a.n_tokens = s.q_len;
  int32_t* idx = i32(t, 4);  // positions[q_len], query_start[2], seq_lens[1], block table
  a.positions = idx;
  a.query_start = idx + s.q_len;
  a.seq_lens = idx + s.q_len + 2;
  a.block_tables = idx + s.q_len + 3;
  a.n_seqs = 1;
  a.max_blocks_per_seq = (int32_t)(pool_slots(s) / kBlockSize);
  a.p = AttentionParams{s.heads, s.kv_heads, s.head_dim, kBlockSize};
  a.workspace = ws;
  return a;
}

// The index tensor: positions, query_start, seq_lens, then a block table that
// visits the pool's blocks in a shuffled order, as a long-running cache's does.
void fill_attention_indices(const OpShape& s, int32_t* idx, std::mt19937& gen) {
  for (int32_t i = 0; i < s.q_len; ++i) idx[i] = s.ctx - s.q_len + i;
  idx[s.q_len] = 0, idx[s.q_len + 1] = s.q_len, idx[s.q_len + 2] = s.ctx;
  int32_t* table = idx + s.q_len + 3;
  const int32_t blocks = (int32_t)(pool_slots(s) / kBlockSize);
  std::iota(table, table + blocks, 0);
  std::shuffle(table, table + blocks, gen);
}

// ---- rope: n tokens of `heads` heads of head_dim, rotated in place

Status check_rope(const OpShape& s) {
  TS_TRY(positive("--n", s.n, "number of tokens"));
  TS_TRY(positive("--heads", s.heads, "number of heads"));
  TS_TRY(positive("--head-dim", s.head_dim, "head size"));
  if (s.head_dim % 2) return invalid_argument("--head-dim: RoPE rotates pairs; " + std::to_string(s.head_dim) + " is odd");
  return Status::ok();
}

// ---- kv_append: n tokens' K and V rows written to slots of a pool of ctx positions

Status check_kv_append(const OpShape& s) {
  TS_TRY(positive("--n", s.n, "number of tokens"));
  TS_TRY(positive("--kv-heads", s.kv_heads, "number of KV heads"));
  TS_TRY(positive("--head-dim", s.head_dim, "head size"));
  TS_TRY(positive("--ctx", s.ctx, "pool size in positions"));
  if (s.n > s.ctx) return invalid_argument("--n: " + std::to_string(s.n) + " tokens do not fit a pool of --ctx " + std::to_string(s.ctx));
  return check_kv_dtype(s);
}

// ---- embedding: n token rows gathered from a table of m rows of k

Status check_embedding(const OpShape& s) {
  TS_TRY(positive("--n", s.n, "number of tokens"));
  TS_TRY(positive("--m", s.m, "number of table rows (vocabulary)"));
  TS_TRY(positive("--k", s.k, "row width"));
  if (!is_whole_blocks(s.dtype, s.k))
    return invalid_argument("--k: " + std::to_string(s.k) + " is not a multiple of " + std::string(name(s.dtype)) +
                            "'s block of " + std::to_string(traits(s.dtype).block_elems));
  return Status::ok();
}

// ---- gather_rows: n f32 rows of k picked from m (the logit rows of a step)

Status check_gather_rows(const OpShape& s) {
  TS_TRY(check_rows(s));
  return positive("--m", s.m, "number of source rows");
}

const OpRow kOps[] = {
    {"matmul", "--type, --m weight rows, --k inputs, --n tokens", check_matmul, matmul_cost,
     [](const OpShape& s) {
       return std::vector<uint64_t>{bytes_for(s.dtype, s.m * s.k), (uint64_t)(s.n * s.k) * 4, (uint64_t)(s.n * s.m) * 4};
     },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       const std::vector<std::byte> w = random_weights(s.dtype, s.m, s.k, gen);
       std::memcpy(t[0], w.data(), w.size());
       fill_uniform(t[1], (uint64_t)(s.n * s.k) * 4, gen);
     },
     [](const OpShape& s, int) { return kc::matmul_workspace_bytes(s.dtype, s.n, s.k); },
     [](const OpShape& s, OpTensors t, void* ws, ParallelFor& pf) { kc::matmul(matmul_args(s, t, ws), pf); }},

    {"attention", "--heads, --kv-heads, --head-dim, --ctx, --q-len, --kv-type", check_attention, attention_cost,
     [](const OpShape& s) {
       const uint64_t q = (uint64_t)(s.q_len * q_width(s)) * 4, pool = kv_pool_bytes(s, pool_slots(s));
       return std::vector<uint64_t>{q, q, pool, pool, (uint64_t)(s.q_len + 3 + pool_slots(s) / kBlockSize) * 4};
     },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       fill_uniform(t[0], (uint64_t)(s.q_len * q_width(s)) * 4, gen);
       fill_uniform_pool(t[2], (uint64_t)(pool_slots(s) * kv_width(s)), s.kv_dtype, gen);
       fill_uniform_pool(t[3], (uint64_t)(pool_slots(s) * kv_width(s)), s.kv_dtype, gen);
       fill_attention_indices(s, i32(t, 4), gen);
     },
     [](const OpShape& s, int threads) {
       return kc::attention_workspace_bytes(AttentionParams{s.heads, s.kv_heads, s.head_dim, kBlockSize},
                                            {s.q_len, 1, s.ctx, threads});
     },
     [](const OpShape& s, OpTensors t, void* ws, ParallelFor& pf) { kc::paged_attention(attention_args(s, t, ws), pf); }},

    {"rms_norm", "--n rows, --k row width", check_rows,
     [](const OpShape& s) {
       OpCostFigures c = rows_cost(s, 4, 2, "rms_norm");  // square, add; scale, weight
       c.bytes += 4.0 * (double)s.k;                      // the weight row
       return c;
     },
     [](const OpShape& s) { return std::vector<uint64_t>{row_bytes(s), (uint64_t)s.k * 4, row_bytes(s)}; },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       fill_uniform(t[0], row_bytes(s), gen);
       fill_uniform(t[1], (uint64_t)s.k * 4, gen);
     },
     no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) {
       kc::rms_norm({f32(t, 0), f32(t, 1), f32(t, 2), s.n, s.k, RmsNormParams{}}, pf);
     }},

    {"add", "--n rows, --k row width", check_rows, [](const OpShape& s) { return rows_cost(s, 1, 3, "add"); },
     [](const OpShape& s) { return std::vector<uint64_t>{row_bytes(s), row_bytes(s), row_bytes(s)}; },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       fill_uniform(t[0], row_bytes(s), gen);
       fill_uniform(t[1], row_bytes(s), gen);
     },
     no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) { kc::add({f32(t, 0), f32(t, 1), f32(t, 2), s.n * s.k}, pf); }},

    {"silu_mul", "--n rows, --k row width", check_rows,
     [](const OpShape& s) { return rows_cost(s, 5, 3, "silu_mul"); },  // negate, exp, add, divide, multiply
     [](const OpShape& s) { return std::vector<uint64_t>{row_bytes(s), row_bytes(s), row_bytes(s)}; },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       fill_uniform(t[0], row_bytes(s), gen);
       fill_uniform(t[1], row_bytes(s), gen);
     },
     no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) {
       kc::silu_mul({f32(t, 0), f32(t, 1), f32(t, 2), s.n * s.k}, pf);
     }},

    {"softmax", "--n rows, --k row width", check_rows,
     [](const OpShape& s) { return rows_cost(s, 5, 2, "softmax"); },  // max, subtract, exp, sum, divide
     [](const OpShape& s) { return std::vector<uint64_t>{row_bytes(s)}; },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) { fill_uniform(t[0], row_bytes(s), gen); }, no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) { kc::softmax({f32(t, 0), s.n, s.k}, pf); }},

    {"argmax", "--n rows, --k row width", check_rows,
     [](const OpShape& s) {
       OpCostFigures c = rows_cost(s, 1, 1, "argmax");  // one comparison an element
       c.bytes += 4.0 * (double)s.n;
       return c;
     },
     [](const OpShape& s) { return std::vector<uint64_t>{row_bytes(s), (uint64_t)s.n * 4}; },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) { fill_uniform(t[0], row_bytes(s), gen); }, no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) { kc::argmax({f32(t, 0), i32(t, 1), s.n, s.k}, pf); }},

    {"rope", "--n tokens, --heads, --head-dim", check_rope,
     [](const OpShape& s) {
       const double e = (double)s.n * (double)q_width(s);
       // Per pair: the angle's cos and sin (counted as 2 each), 4 multiplies and 2 adds.
       return OpCostFigures{5.0 * e, 2.0 * 4.0 * e + 4.0 * (double)s.n, ComputeDtype::f32_fma, "rope"};
     },
     [](const OpShape& s) { return std::vector<uint64_t>{(uint64_t)(s.n * q_width(s)) * 4, (uint64_t)s.n * 4}; },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       fill_uniform(t[0], (uint64_t)(s.n * q_width(s)) * 4, gen);
       for (int64_t i = 0; i < s.n; ++i) i32(t, 1)[i] = (int32_t)(gen() % 4096);
     },
     no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) {
       kernels::RopeArgs a;
       a.x = f32(t, 0);
       a.positions = i32(t, 1);
       a.n_tokens = s.n;
       a.p = RopeParams{s.heads, s.head_dim, s.head_dim};
       kc::rope(a, pf);
     }},

    {"kv_append", "--n tokens, --kv-heads, --head-dim, --ctx pool positions, --kv-type", check_kv_append,
     [](const OpShape& s) {
       return OpCostFigures{0, 2.0 * 4.0 * (double)(s.n * kv_width(s)) + 2.0 * (double)kv_pool_bytes(s, s.n) + 4.0 * (double)s.n,
                            ComputeDtype::f32_fma, "kv_append (" + std::string(name(s.kv_dtype)) + " KV)"};
     },
     [](const OpShape& s) {
       const uint64_t rows = (uint64_t)(s.n * kv_width(s)) * 4, pool = kv_pool_bytes(s, pool_slots(s));
       return std::vector<uint64_t>{rows, rows, pool, pool, (uint64_t)s.n * 4};
     },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       fill_uniform(t[0], (uint64_t)(s.n * kv_width(s)) * 4, gen);
       fill_uniform(t[1], (uint64_t)(s.n * kv_width(s)) * 4, gen);
       for (int64_t i = 0; i < s.n; ++i) i32(t, 4)[i] = (int32_t)(s.ctx - s.n + i);
     },
     no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) {
       kernels::KvAppendArgs a;
       a.k = f32(t, 0), a.v = f32(t, 1);
       a.k_pool = t[2], a.v_pool = t[3];
       a.kv_dtype = s.kv_dtype;
       a.slot_mapping = i32(t, 4);
       a.n_tokens = s.n;
       a.num_slots = pool_slots(s);
       a.p = KvCacheParams{s.kv_heads, s.head_dim, kBlockSize};
       kc::kv_append(a, pf);
     }},

    {"gather_rows", "--m source rows, --n rows gathered, --k row width", check_gather_rows,
     [](const OpShape& s) {
       return OpCostFigures{0, 2.0 * (double)row_bytes(s) + 4.0 * (double)s.n, ComputeDtype::f32_fma, "gather_rows"};
     },
     [](const OpShape& s) {
       return std::vector<uint64_t>{(uint64_t)(s.m * s.k) * 4, (uint64_t)s.n * 4, row_bytes(s)};
     },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       fill_uniform(t[0], (uint64_t)(s.m * s.k) * 4, gen);
       for (int64_t i = 0; i < s.n; ++i) i32(t, 1)[i] = (int32_t)(gen() % (uint64_t)s.m);
     },
     no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) {
       kc::gather_rows({t[0], i32(t, 1), t[2], s.n, s.m, s.k * 4}, pf);
     }},

    {"embedding", "--type table dtype, --m table rows, --k row width, --n tokens", check_embedding,
     [](const OpShape& s) {
       // One conversion an element read (none for f32: a copy, data movement only).
       const double e = (double)s.n * (double)s.k;
       return OpCostFigures{s.dtype == DType::f32 ? 0.0 : e, (double)(bytes_for(s.dtype, s.k) * (uint64_t)s.n) + 4.0 * e,
                            ComputeDtype::f32_fma, "embedding (" + std::string(name(s.dtype)) + " table)"};
     },
     [](const OpShape& s) {
       return std::vector<uint64_t>{bytes_for(s.dtype, s.m * s.k), (uint64_t)s.n * 4, (uint64_t)(s.n * s.k) * 4};
     },
     [](const OpShape& s, OpTensors t, std::mt19937& gen) {
       const std::vector<std::byte> table = random_weights(s.dtype, s.m, s.k, gen);
       std::memcpy(t[0], table.data(), table.size());
       for (int64_t i = 0; i < s.n; ++i) i32(t, 1)[i] = (int32_t)(gen() % (uint64_t)s.m);
     },
     no_workspace,
     [](const OpShape& s, OpTensors t, void*, ParallelFor& pf) {
       kernels::EmbeddingArgs a;
       a.table = t[0];
       a.table_dtype = s.dtype;
       a.vocab = s.m, a.dim = s.k;
       a.ids = i32(t, 1);
       a.n_tokens = s.n;
       a.out = f32(t, 2);
       kc::embedding(a, pf);
     }},
};

}  // namespace

std::span<const OpRow> op_table() { return kOps; }

const OpRow* find_op(const std::string& name) {
  for (const OpRow& r : kOps)
    if (name == r.name) return &r;
  return nullptr;
}

std::string op_names() {
  std::string s;
  for (const OpRow& r : kOps) s += (s.empty() ? "" : ", ") + std::string(r.name);
  return s;
}

}  // namespace tessera
