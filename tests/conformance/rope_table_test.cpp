// RoPE from the folded cos/sin table (graph constant rope_table) against RoPE
// computed on the fly, on random inputs at odd shapes and long positions: the
// table must give the same bits, on the reference and on every CPU ISA, for
// rope and for rope_kv_append; and a position past the table is refused by
// the executable before any kernel reads it.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "conformance.h"
#include "graph/constants.h"
#include "graph/lower.h"
#include "graph/parser.h"
#include "graph/verifier.h"
#include "hal_harness.h"
#include "support/requirements.h"
#include "support/rope_table_graph.h"

namespace tessera::testing {
namespace {

using kernels::RopeKvAppendArgs, kernels::RopeTableArgs;

std::vector<float> make_table(int32_t rot_dims, float theta, int32_t positions) {
  std::vector<float> t((size_t)positions * rot_dims);
  ref::rope_table({t.data(), RopeTableParams{rot_dims, theta, positions}});
  return t;
}

struct Case {
  int32_t n_heads, head_dim, rot_dims;
  RopeLayout layout;
  float theta;
};
const Case kCases[] = {Case{4, 16, 16, RopeLayout::interleaved, 10000.0f}, Case{3, 64, 64, RopeLayout::half_split, 10000.0f},
                       Case{2, 10, 6, RopeLayout::interleaved, 10000.0f},  Case{5, 63, 32, RopeLayout::half_split, 500000.0f},
                       Case{32, 128, 128, RopeLayout::interleaved, 10000.0f}, Case{1, 6, 2, RopeLayout::half_split, 1e6f}};

TEST_CASE("rope_table rows are the on-the-fly cos/sin: rope from the table equals rope computed, to the bit") {
  Rng rng(701);
  const int32_t positions = 8192;
  for (const Case& c : kCases) {
    INFO("heads=" << c.n_heads << " head_dim=" << c.head_dim << " rot_dims=" << c.rot_dims << " theta=" << c.theta
                  << " layout=" << (c.layout == RopeLayout::interleaved ? "interleaved" : "half_split"));
    const std::vector<float> table = make_table(c.rot_dims, c.theta, positions);
    for (int64_t n_tokens : {1, 7, 33}) {
      std::vector<int32_t> pos((size_t)n_tokens);
      for (auto& p : pos) p = rng.integer(0, positions - 1);
      pos[0] = positions - 1;  // the last row too
      const RopeParams p{c.n_heads, c.head_dim, c.rot_dims, c.theta, c.layout};
      const std::vector<float> x = rng.floats((size_t)(n_tokens * c.n_heads * c.head_dim), -4.0f, 4.0f);
      std::vector<float> want = x, ref_table = x;
      ref::rope({want.data(), pos.data(), n_tokens, p});
      ref::rope({ref_table.data(), pos.data(), n_tokens, p, table.data(), positions});
      CHECK(ref_table == want);
      for_each_isa([&](cpu::Isa) {
        std::vector<float> on_the_fly = x, from_table = x;
        cpu::rope({on_the_fly.data(), pos.data(), n_tokens, p}, pool());
        cpu::rope({from_table.data(), pos.data(), n_tokens, p, table.data(), positions}, pool());
        // The pass must not change a result: the table form is the on-the-fly form's bits.
        CHECK(from_table == on_the_fly);
        CHECK(max_abs_diff(from_table, want) <= 1e-6);
      });
    }
  }
}

TEST_CASE("rope_kv_append from the table equals rope_kv_append computed, to the bit, and the reference") {
  Rng rng(702);
  const int32_t positions = 300;
  for_each_isa([&](cpu::Isa) {
    for (int64_t n : {1, 5, 13}) {
      CAPTURE(n);
      const RopeParams rp{4, 12, 8, 10000.0f, RopeLayout::half_split};
      const KvCacheParams kvp{2, 12, 4};
      const int64_t qw = 48, kvw = 24, slots = 32;
      const std::vector<float> table = make_table(rp.rot_dims, rp.theta, positions);
      const auto q = rng.floats((size_t)(n * qw)), k = rng.floats((size_t)(n * kvw)), v = rng.floats((size_t)(n * kvw));
      std::vector<int32_t> pos((size_t)n), slot((size_t)n);
      for (int64_t i = 0; i < n; ++i) {
        pos[(size_t)i] = rng.integer(0, positions - 1);
        slot[(size_t)i] = (int32_t)(slots - 1 - 2 * i);
      }
      auto run = [&](const float* t, std::vector<float>& q_out, std::vector<float>& kp, std::vector<float>& vp) {
        std::vector<float> k_rot((size_t)(n * kvw));
        q_out = q;
        kp.assign((size_t)(slots * kvw), 0.0f);
        vp = kp;
        RopeKvAppendArgs a{q_out.data(), q_out.data(), k.data(), v.data(), k_rot.data(), pos.data(), slot.data(), n,
                           kp.data(), vp.data(), DType::f32, slots, {rp, kvp}, t, t ? positions : 0};
        cpu::rope_kv_append(a, pool());
      };
      std::vector<float> q0, kp0, vp0, q1, kp1, vp1;
      run(nullptr, q0, kp0, vp0);
      run(table.data(), q1, kp1, vp1);
      CHECK(q1 == q0);
      CHECK(kp1 == kp0);
      CHECK(vp1 == vp0);
      std::vector<float> ref_q((size_t)(n * qw)), rkp((size_t)(slots * kvw), 0.0f), rvp(rkp);
      RopeKvAppendArgs ra{q.data(), ref_q.data(), k.data(), v.data(), nullptr, pos.data(), slot.data(), n,
                          rkp.data(), rvp.data(), DType::f32, slots, {rp, kvp}, table.data(), positions};
      ref::rope_kv_append(ra);
      CHECK(max_abs_diff(q1, ref_q) <= 1e-6);
      CHECK(max_abs_diff(kp1, rkp) <= 1e-6);
      CHECK(vp1 == rvp);
    }
  });
}

TEST_CASE("the CPU executable refuses a position past the folded table, and rotates by it below") {
  auto g = graph::parse(kRopeWithTable, "rope_table.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  REQUIRE(graph::verify(*g).is_ok());
  DeviceUnderTest* cpu_dev = nullptr;
  for (auto& d : devices_under_test())
    if (d.label == "cpu:0") cpu_dev = &d;
  REQUIRE(cpu_dev);
  Device& dev = *cpu_dev->device;
  auto plan = graph::lower(*g, ShapeBucket{4, 1, 4, 1});
  REQUIRE_MESSAGE(plan.has_value(), plan.status().message());
  Rng rng(703);
  const std::vector<float> x = rng.floats(4 * 16);
  auto table = graph::materialize_constant(g->value(2));
  REQUIRE(table.has_value());
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> bound(plan->buffers.size(), nullptr);
  const std::vector<std::byte> x_bytes = as_bytes(x);
  for (size_t i = 0; i < plan->buffers.size(); ++i) {
    const PlanBuffer& pb = plan->buffers[i];
    if (pb.role != BufferRole::weight) continue;
    auto b = dev.import_weights(pb.name == "x" ? std::span<const std::byte>(x_bytes) : std::span<const std::byte>(*table));
    REQUIRE(b.has_value());
    owned.push_back(std::move(*b));
    bound[i] = owned.back().get();
  }
  auto exe = dev.compile(*plan, bound);
  REQUIRE_MESSAGE(exe.has_value(), exe.status().message());
  auto stream = dev.create_stream();
  REQUIRE(stream.has_value());

  std::vector<int32_t> tokens(4, 0), slots(4, 0), query_start = {0, 4}, seq_lens = {64}, blocks = {0};
  auto step = [&](std::vector<int32_t> pos) {
    StepArgs a;
    a.token_ids = tokens.data();
    a.positions = pos.data();
    a.slot_mapping = slots.data();
    a.n_tokens = 4;
    a.query_start = query_start.data();
    a.seq_lens = seq_lens.data();
    a.block_tables = blocks.data();
    a.n_seqs = 1;
    return (*stream)->run(**exe, a);
  };
  const Status past = step({0, 5, 64, 1});
  REQUIRE(!past.is_ok());
  CHECK(past.message() == "step: position 64 of token 2 is outside the RoPE table's 64 positions (the context it was folded for)");
  CHECK(!step({-1, 0, 0, 0}).is_ok());

  const std::vector<int32_t> good = {0, 5, 63, 17};
  REQUIRE(step(good).is_ok());
  REQUIRE((*stream)->synchronize().is_ok());
  std::vector<float> got(4 * 16);
  const PlanTensor& out = (*exe)->plan().logits;
  REQUIRE((*stream)->download({reinterpret_cast<std::byte*>(got.data()), got.size() * 4}, (*exe)->buffer(out.buffer), out.offset).is_ok());
  REQUIRE((*stream)->synchronize().is_ok());
  std::vector<float> want = x;
  ref::rope({want.data(), good.data(), 4, RopeParams{2, 8, 8, 10000.0f, RopeLayout::interleaved}});
  CHECK(got == want);
}

// Not a check: the timing the docs quote. Run with TESSERA_TIMING=1 -tc='*timing*'.
TEST_CASE("timing: CPU rope from the table against on the fly" * needs(timing_cases())) {
  Rng rng(704);
  const RopeParams p{32, 128, 128, 10000.0f, RopeLayout::interleaved};
  const int32_t positions = 4096;
  const std::vector<float> table = make_table(p.rot_dims, p.theta, positions);
  for (int64_t n : {1, 64, 512}) {
    std::vector<int32_t> pos((size_t)n);
    for (auto& q : pos) q = rng.integer(0, positions - 1);
    std::vector<float> x = rng.floats((size_t)(n * p.n_heads * p.head_dim));
    auto time_us = [&](const float* t) {
      const int reps = n == 1 ? 20000 : n == 64 ? 500 : 60;
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) cpu::rope({x.data(), pos.data(), n, p, t, t ? positions : 0}, pool());
      return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
    };
    time_us(nullptr);
    const double fly = time_us(nullptr), tab = time_us(table.data());
    std::printf("rope 32x128, %3lld tokens: on the fly %8.2f us, from the table %8.2f us (%.1fx)\n", (long long)n, fly, tab,
                fly / tab);
  }
}

}  // namespace
}  // namespace tessera::testing
