// Kernels never allocate (architecture contract): every CPU kernel is run
// with the global operator new counting, on every ISA. oneDNN's sgemm (f32
// weights, m >= 64) is left out: it allocates its own packing buffers with
// malloc, which this does not count. tests/unit/cpu_step_alloc_test.cpp runs
// whole steps (every fused kernel, through the CPU executable) the same way.
#include <vector>

#include "conformance.h"
#include "support/counting_new.h"

namespace tessera::testing {
namespace {

TEST_CASE("CPU kernels do not allocate, on any ISA, for any matmul weight dtype they own") {
  Rng rng(501);
  const int64_t m = 7, n = 45, k = 512;
  const std::vector<float> x = rng.floats((size_t)(m * k));
  std::vector<float> y((size_t)(m * n));
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K, DType::q5_K, DType::q6_K, DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q2_K, DType::q3_K, DType::iq4_xs}) {
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
                {kv.data(), kv.data(), slot_mapping.data(), n_tokens, k_pool.data(), v_pool.data(), DType::f32, slots, kp}, pool());
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
    CHECK(allocations_of([&] { cpu::mul({a.data(), b.data(), c.data(), 4096}, pool()); }) == 0);
    CHECK(allocations_of([&] { cpu::silu({a.data(), c.data(), 4096}, pool()); }) == 0);
    CHECK(allocations_of([&] { cpu::gelu({a.data(), c.data(), 4096}, pool()); }) == 0);
    CHECK(allocations_of([&] { cpu::bias_add({a.data(), b.data(), c.data(), 4, 1024}, pool()); }) == 0);
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

TEST_CASE("CPU elementwise programs and matmul epilogues do not allocate") {
  Rng rng(503);
  const int64_t rows = 5, cols = 96, k = 64;
  const std::vector<float> a = rng.floats((size_t)(rows * cols)), bias = rng.floats((size_t)cols), x = rng.floats((size_t)(rows * k));
  const std::vector<float> w = rng.floats((size_t)(cols * k));
  std::vector<float> out((size_t)(rows * cols));
  // out = gelu(a0 + bias a1) * a2: a bias row, a unary op and a binary one.
  const ElementwiseProgram p{3, 3, {{EwOp::bias_add, 0, 1}, {EwOp::gelu, 3, 0}, {EwOp::mul, 4, 2}}};
  AlignedBuffer ws(cpu::matmul_workspace_bytes(DType::f32, rows, k));
  for_each_isa([&](cpu::Isa) {
    kernels::ElementwiseArgs e;
    e.program = &p;
    e.inputs[0] = a.data();
    e.inputs[1] = bias.data();
    e.inputs[2] = a.data();
    e.out = out.data();
    e.rows = rows;
    e.cols = cols;
    CHECK(allocations_of([&] { cpu::elementwise(e, pool()); }) == 0);
    kernels::MatmulEpilogueArgs me;
    me.mm = {x.data(), w.data(), DType::f32, out.data(), rows, cols, k, ws.data()};
    me.epilogue.program = &p;
    me.epilogue.inputs[1] = bias.data();
    me.epilogue.inputs[2] = a.data();
    CHECK(allocations_of([&] { cpu::matmul_epilogue(me, pool()); }) == 0);
  });
}

}  // namespace
}  // namespace tessera::testing
