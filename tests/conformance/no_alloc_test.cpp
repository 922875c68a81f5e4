// Kernels never allocate (architecture contract): every CPU kernel is run
// with the global allocator counting, on every ISA. oneDNN's sgemm (f32
// weights, m >= 64) is left out: what it does inside is its own business.
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "conformance.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

void* counted_alloc(size_t n, size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return counted_alloc(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return counted_alloc(n, (size_t)a); }
// Every form of new must come here too: a nothrow new left to the runtime
// (std::stable_sort's buffer uses one) would be freed by the delete below.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try { return counted_alloc(n, 0); } catch (...) { return nullptr; }
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try { return counted_alloc(n, (size_t)a); } catch (...) { return nullptr; }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace tessera::testing {
namespace {

// Runs fn once to warm up (static init, first-use probes), then again counting.
template <typename Fn>
long allocations_of(Fn fn) {
  fn();
  g_allocations = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_allocations.load();
}

TEST_CASE("CPU kernels do not allocate, on any ISA, for any matmul weight dtype they own") {
  Rng rng(501);
  const int64_t m = 7, n = 45, k = 512;
  const std::vector<float> x = rng.floats((size_t)(m * k));
  std::vector<float> y((size_t)(m * n));
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K}) {
    const std::vector<std::byte> w = random_weights(t, n, k, rng);
    AlignedBuffer ws(cpu::matmul_workspace_bytes(t, m, k));
    for_each_isa([&](cpu::Isa) {
      for (int64_t rows : {(int64_t)1, m}) {
        INFO(cpu::matmul_kernel_name(t, rows));
        CHECK(allocations_of([&] {
                cpu::matmul({x.data(), w.data(), t, y.data(), rows, n, k, ws.data()}, pool());
              }) == 0);
      }
    });
  }
}

TEST_CASE("CPU attention, norm, rope, KV and element-wise kernels do not allocate") {
  Rng rng(502);
  AttentionParams p;
  p.n_heads = 8;
  p.n_kv_heads = 2;
  p.head_dim = 16;
  const int64_t n_tokens = 5, kv_row = (int64_t)p.n_kv_heads * p.head_dim, slots = 64;
  const std::vector<float> q = rng.floats((size_t)(n_tokens * p.n_heads * p.head_dim));
  std::vector<float> out(q.size()), k_pool = rng.floats((size_t)(slots * kv_row)), v_pool = k_pool;
  const std::vector<int32_t> positions = {0, 1, 2, 20, 7}, query_start = {0, 3, 4, 5}, seq_lens = {3, 21, 8},
                             tables = {2, -1, 0, 1, 3, -1};
  AlignedBuffer ws(cpu::attention_workspace_bytes(p, {n_tokens, 3, 32, pool().num_threads()}));
  const std::vector<float> kv = rng.floats((size_t)(n_tokens * kv_row));
  const std::vector<int32_t> slot_mapping = {9, 3, 60, 17, 0};
  std::vector<float> a = rng.floats(4096), b = rng.floats(4096), c(4096);
  std::vector<int32_t> ids = {3, 1, 4}, arg(4);
  std::vector<std::byte> rows_out(3 * 64);
  for_each_isa([&](cpu::Isa) {
    AttentionArgs at;
    at.q = q.data();
    at.out = out.data();
    at.n_tokens = n_tokens;
    at.k_pool = k_pool.data();
    at.v_pool = v_pool.data();
    at.positions = positions.data();
    at.query_start = query_start.data();
    at.seq_lens = seq_lens.data();
    at.block_tables = tables.data();
    at.n_seqs = 3;
    at.max_blocks_per_seq = 2;
    at.p = p;
    at.workspace = ws.data();
    CHECK(allocations_of([&] { cpu::paged_attention(at, pool()); }) == 0);
    KvCacheParams kp{p.n_kv_heads, p.head_dim, p.block_size};
    CHECK(allocations_of([&] {
            cpu::kv_append(
                {kv.data(), kv.data(), slot_mapping.data(), n_tokens, k_pool.data(), v_pool.data(), slots, kp}, pool());
          }) == 0);
    CHECK(allocations_of([&] {
            cpu::rms_norm({a.data(), b.data(), c.data(), 4, 1024, RmsNormParams{}}, pool());
          }) == 0);
    CHECK(
        allocations_of([&] {
          cpu::rope({c.data(), positions.data(), 4, RopeParams{8, 128, 128, 10000.0f, RopeLayout::half_split}}, pool());
        }) == 0);
    CHECK(allocations_of([&] { cpu::silu_mul({a.data(), b.data(), c.data(), 4096}, pool()); }) == 0);
    CHECK(allocations_of([&] { cpu::add({a.data(), b.data(), c.data(), 4096}, pool()); }) == 0);
    CHECK(allocations_of([&] { cpu::softmax({c.data(), 4, 1024}, pool()); }) == 0);
    CHECK(allocations_of([&] { cpu::argmax({a.data(), arg.data(), 4, 1024}, pool()); }) == 0);
    CHECK(allocations_of([&] {
            cpu::embedding({a.data(), DType::f32, 64, 64, ids.data(), 3, c.data()}, pool());
          }) == 0);
    CHECK(allocations_of([&] {
            cpu::gather_rows({reinterpret_cast<const std::byte*>(b.data()), ids.data(), rows_out.data(), 3, 64, 64},
                             pool());
          }) == 0);
  });
}

}  // namespace
}  // namespace tessera::testing
