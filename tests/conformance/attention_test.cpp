// Paged attention and KV append on the CPU against the reference: K/V read
// through shuffled (non-contiguous) block tables, grouped-query heads,
// several sequences per call, prefill (causal, several query tokens per
// sequence, the tiled path) and decode (one query token, the split path),
// mixed in one call; the workspace stays within attention_workspace_bytes.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention_scenario.h"
#include "conformance.h"
#include "kernels/kv_element.h"

namespace tessera::testing {
namespace {

// Claims `threads` threads but runs the items one at a time in a shuffled
// order: the kernel cuts its work (decode pieces, lanes) as that many
// threads would have it, and no result may depend on the order items run in.
class ShuffledFor final : public ParallelFor {
 public:
  ShuffledFor(int threads, Rng& rng) : threads_(threads), rng_(rng) {}
  int num_threads() const override { return threads_; }
  void run(int64_t n, int64_t, const std::function<void(int64_t, int64_t)>& fn) override {
    std::vector<int64_t> order((size_t)std::max<int64_t>(n, 0));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_.engine());
    for (int64_t i : order) fn(i, i + 1);
  }

 private:
  int threads_;
  Rng& rng_;
};


void check(const Scenario& sc) {
  const size_t out_size = (size_t)(sc.n_tokens * sc.p.n_heads * sc.p.head_dim);
  std::vector<float> want(out_size);
  ref::paged_attention(sc.args(want.data(), nullptr));
  Rng order_rng(299);
  ShuffledFor wide(16, order_rng);
  for (ParallelFor* pf : {&pool(), static_cast<ParallelFor*>(&wide)}) {
    CAPTURE(pf->num_threads());
    for_each_isa([&](cpu::Isa) {
      std::vector<float> got(out_size, -777.0f);
      const size_t ws_bytes = cpu::attention_workspace_bytes(
          sc.p, {sc.n_tokens, (int64_t)sc.seqs.size(), max_context(sc), pf->num_threads()});
      AlignedBuffer ws(ws_bytes);
      cpu::paged_attention(sc.args(got.data(), ws.data()), *pf);
      const double err = rel_error(got, want);
      CHECK_MESSAGE(err <= kAttentionBound, "relative error " << err);
      // AlignedBuffer fills its slack past ws_bytes with 0xcd: the kernel must leave it so.
      const auto* bytes = static_cast<const unsigned char*>(ws.data());
      size_t overrun = 0;
      for (size_t i = ws_bytes; i < ws.size; ++i) overrun += bytes[i] != 0xcd;
      CHECK_MESSAGE(overrun == 0, overrun << " bytes written past attention_workspace_bytes = " << ws_bytes);
    });
  }
}

AttentionParams gqa(int head_dim, int block_size) {
  AttentionParams p;
  p.n_heads = 8;
  p.n_kv_heads = 2;
  p.head_dim = head_dim;
  p.block_size = block_size;
  return p;
}

TEST_CASE(
    "paged attention matches reference for causal prefill of 3 sequences spanning several shuffled blocks (GQA 8/2)") {
  Rng rng(201);
  check(Scenario(gqa(16, 16), {{37, 37}, {5, 5}, {50, 50}}, rng));
  check(Scenario(gqa(63, 4), {{13, 13}, {1, 1}, {22, 22}}, rng));
}

TEST_CASE("paged attention matches reference for chunked prefill (queries at the end of a longer cached sequence)") {
  Rng rng(202);
  check(Scenario(gqa(32, 16), {{40, 7}, {70, 16}, {3, 2}}, rng));
}

TEST_CASE("paged attention matches reference for decode of 4 sequences, one token each, head_dim 63") {
  Rng rng(203);
  check(Scenario(gqa(63, 16), {{1, 1}, {17, 1}, {33, 1}, {100, 1}}, rng));
  check(Scenario(gqa(128, 16), {{300, 1}, {64, 1}}, rng));
}

TEST_CASE("paged attention matches reference for a mixed step: long decodes split, prefill chunks at nonzero positions tiled") {
  Rng rng(207);
  // Decodes with contexts of several hundred positions beside prefill chunks
  // of 1, 3, 17 and 33 tokens that continue cached sequences, and a whole prompt.
  const std::vector<Seq> seqs = {{700, 1}, {40, 3}, {451, 1}, {90, 17}, {19, 1}, {120, 33}, {33, 33}, {300, 1}};
  check(Scenario(gqa(32, 16), seqs, rng));
  check(Scenario(gqa(63, 8), seqs, rng));
  // The long decodes really split into pieces under the wide ParallelFor (and under pool() when alone).
  CHECK(cpu::attention_decode_pieces(gqa(32, 16), 4, 451, 16) > 1);
}

TEST_CASE("paged attention matches reference for decode whose long context is split over the threads (MQA 4/1)") {
  Rng rng(208);
  AttentionParams p = gqa(64, 16);
  p.n_heads = 4;
  p.n_kv_heads = 1;
  const Scenario sc(p, {{1000, 1}, {777, 1}}, rng);
  REQUIRE(cpu::attention_decode_pieces(p, 2, 777, pool().num_threads()) > 1);
  REQUIRE(cpu::attention_decode_pieces(p, 2, 777, 16) > 4);
  check(sc);
  // One sequence alone: the most pieces, the last one short.
  check(Scenario(p, {{1001, 1}}, rng));
}

TEST_CASE("paged attention matches reference when not causal (every query sees the whole sequence)") {
  Rng rng(204);
  AttentionParams p = gqa(20, 8);
  p.causal = false;
  check(Scenario(p, {{19, 5}, {8, 8}, {30, 1}}, rng));
}

TEST_CASE("paged attention honours an explicit scale, and MHA (8/8) and MQA (8/1) head groupings") {
  Rng rng(205);
  AttentionParams p = gqa(16, 16);
  p.scale = 0.37f;
  check(Scenario(p, {{25, 25}, {40, 1}}, rng));
  p = gqa(24, 16);
  p.n_kv_heads = 8;
  check(Scenario(p, {{33, 33}, {18, 1}}, rng));
  p.n_kv_heads = 1;
  check(Scenario(p, {{33, 4}, {18, 18}}, rng));
}

// Part of base's call, with base's pools: for each {sequence, first, count},
// that sequence's query tokens [first, first + count) (indices into its
// queries in base), with its block table.
Scenario part_of(const Scenario& base, const std::vector<std::array<int32_t, 3>>& parts) {
  Scenario s = base;
  s.seqs.clear();
  s.positions.clear();
  s.query_start = {0};
  s.seq_lens.clear();
  s.block_tables.clear();
  s.q.clear();
  const int64_t q_width = (int64_t)base.p.n_heads * base.p.head_dim;
  for (const auto& [seq, first, count] : parts) {
    const int64_t t0 = base.query_start[(size_t)seq] + first;
    for (int64_t t = t0; t < t0 + count; ++t) {
      s.positions.push_back(base.positions[(size_t)t]);
      s.q.insert(s.q.end(), base.q.begin() + t * q_width, base.q.begin() + (t + 1) * q_width);
    }
    s.query_start.push_back((int32_t)s.positions.size());
    s.seq_lens.push_back(s.positions.back() + 1);
    s.seqs.push_back({s.seq_lens.back(), count});
    const auto row = base.block_tables.begin() + (int64_t)seq * base.max_blocks_per_seq;
    s.block_tables.insert(s.block_tables.end(), row, row + base.max_blocks_per_seq);
  }
  s.n_tokens = (int64_t)s.positions.size();
  return s;
}

// The attention output of sc on pf, with a workspace sized for pf's threads.
std::vector<float> attend(const Scenario& sc, ParallelFor& pf) {
  std::vector<float> out((size_t)(sc.n_tokens * sc.p.n_heads * sc.p.head_dim), -777.0f);
  AlignedBuffer ws(cpu::attention_workspace_bytes(sc.p, {sc.n_tokens, (int64_t)sc.seqs.size(), max_context(sc), pf.num_threads()}));
  cpu::paged_attention(sc.args(out.data(), ws.data()), pf);
  return out;
}

// docs/backends.md, "Batch invariance": the CPU kernel cuts every context
// into fixed 128-position pieces and merges them in order on every path, so
// whether a decode is split over the threads or runs as one unit, and
// whether a token is a decode or a row of a chunk, changes nothing.
void check_batch_invariance(const AttentionParams& params, Rng& rng) {
  // Sequence 0 has 300 positions; its last 45 queries cross the 256-position piece boundary.
  const Scenario base(params, {{300, 45}, {700, 1}, {60, 9}, {1000, 1}, {130, 1}}, rng);
  const int32_t watched = 45;
  const int64_t width = (int64_t)base.p.n_heads * base.p.head_dim;
  Rng order_rng(210);
  ShuffledFor one(1, order_rng), wide(16, order_rng), wider(64, order_rng);
  for (ParallelFor* pf : {&pool(), static_cast<ParallelFor*>(&one), static_cast<ParallelFor*>(&wide), static_cast<ParallelFor*>(&wider)}) {
    CAPTURE(pf->num_threads());
    for_each_isa([&](cpu::Isa) {
      // The watched tokens as one chunk alone, on the pool (each ISA sums in its own order).
      const std::vector<float> want = attend(part_of(base, {{0, 0, watched}}), pool());
      struct Arrangement {
        std::string what;
        int32_t chunk;
        std::vector<std::array<int32_t, 3>> before, after;
      };
      for (const Arrangement& a : {Arrangement{"decodes alone", 1, {}, {}},
                                   Arrangement{"decodes beside a long decode", 1, {{3, 0, 1}}, {}},
                                   Arrangement{"decodes beside three decodes and a chunk", 1, {{1, 0, 1}, {3, 0, 1}}, {{4, 0, 1}, {2, 0, 9}}},
                                   Arrangement{"chunks of 7 beside a decode", 7, {{1, 0, 1}}, {}},
                                   Arrangement{"one chunk beside decodes and a chunk", watched, {{1, 0, 1}, {2, 0, 9}}, {{3, 0, 1}}}}) {
        CAPTURE(a.what);
        for (int32_t t = 0; t < watched; t += a.chunk) {
          const int32_t n = std::min(a.chunk, watched - t);
          std::vector<std::array<int32_t, 3>> parts = a.before;
          parts.push_back({0, t, n});
          parts.insert(parts.end(), a.after.begin(), a.after.end());
          const Scenario sc = part_of(base, parts);
          const std::vector<float> got = attend(sc, *pf);
          const int32_t at = sc.query_start[a.before.size()];
          CAPTURE(t);
          CHECK(std::memcmp(got.data() + at * width, want.data() + t * width, (size_t)(n * width) * sizeof(float)) == 0);
        }
      }
    });
  }
}

TEST_CASE("a token's attention bits do not depend on the threads, the call's other sequences, or its being a decode or a chunk row") {
  Rng rng(209);
  check_batch_invariance(gqa(32, 16), rng);
}

TEST_CASE("with a sliding window and soft-capped scores too, a token's attention bits depend on nothing but the token") {
  Rng rng(211);
  AttentionParams p = gqa(32, 16);
  p.window = 150;  // the watched queries' windows start inside the first piece and cross into the second
  p.softcap = 5.0f;
  check_batch_invariance(p, rng);
  p.window = 7;  // inside one block
  check_batch_invariance(p, rng);
}

AttentionParams windowed(int head_dim, int block_size, int32_t window, float softcap = 0.0f) {
  AttentionParams p = gqa(head_dim, block_size);
  p.window = window;
  p.softcap = softcap;
  return p;
}

TEST_CASE("paged attention with a sliding window matches the reference: prefill, chunks, split decodes, windows of 1 to beyond the context") {
  Rng rng(212);
  for (int32_t window : {1, 5, 16, 17, 64, 129, 300, 5000}) {
    CAPTURE(window);
    check(Scenario(windowed(16, 16, window), {{37, 37}, {5, 5}, {50, 50}}, rng));
    check(Scenario(windowed(32, 16, window), {{40, 7}, {70, 16}, {3, 2}}, rng));
    check(Scenario(windowed(63, 8, window), {{700, 1}, {40, 3}, {451, 1}, {90, 17}, {19, 1}, {120, 33}}, rng));
  }
  // One long decode alone splits into many pieces, most of them before its window.
  AttentionParams p = windowed(64, 16, 200);
  p.n_heads = 4;
  p.n_kv_heads = 1;
  REQUIRE(cpu::attention_decode_pieces(p, 1, 1001, pool().num_threads()) > 1);
  check(Scenario(p, {{1001, 1}}, rng));
}

TEST_CASE("a window of w keys sees exactly the last w positions") {
  // One head, head_dim 1, q = 1: each score is the key itself. V = position,
  // K = 0 everywhere: a uniform softmax, so the output is the mean of the
  // window's positions.
  Rng rng(213);
  AttentionParams p{1, 1, 1, 4, 1.0f, true, 3, 0.0f};
  Scenario sc(p, {{10, 10}}, rng);
  std::fill(sc.q.begin(), sc.q.end(), 1.0f);
  std::fill(sc.k_pool.begin(), sc.k_pool.end(), 0.0f);
  for (int32_t j = 0; j < 10; ++j) sc.v_pool[(size_t)(sc.block_tables[(size_t)(j / 4)] * 4 + j % 4)] = (float)j;
  std::vector<float> want(10), got(10);
  ref::paged_attention(sc.args(want.data(), nullptr));
  AlignedBuffer ws(cpu::attention_workspace_bytes(p, {10, 1, max_context(sc), pool().num_threads()}));
  cpu::paged_attention(sc.args(got.data(), ws.data()), pool());
  for (int t = 0; t < 10; ++t) {
    const double first = std::max(0, t - 2), mean = (first + t) / 2.0;
    CHECK(want[(size_t)t] == doctest::Approx(mean));
    CHECK(got[(size_t)t] == doctest::Approx(mean));
  }
}

TEST_CASE("paged attention with soft-capped scores matches the reference, with and without an explicit scale and a window") {
  Rng rng(214);
  for (float cap : {0.5f, 5.0f, 50.0f}) {
    CAPTURE(cap);
    check(Scenario(windowed(16, 16, 0, cap), {{25, 25}, {40, 1}, {300, 1}}, rng));
    AttentionParams p = windowed(32, 8, 33, cap);
    p.scale = 0.7f;  // large scores, so the cap bites
    check(Scenario(p, {{90, 17}, {451, 1}, {33, 33}}, rng));
  }
}

TEST_CASE("attention's vector exp is within 2e-7 of exp on every ISA, exactly 1 at 0, and 0 below ln(FLT_MIN) and at -inf") {
  Rng rng(217);
  std::vector<float> x = rng.floats(100003, -87.3f, 88.0f);  // not a multiple of any vector width
  const std::vector<float> edges = {0.0f, -0.0f, -1e-30f, 1e-30f, -87.3f, 88.0f, -87.34f, -100.0f, -1e30f, -INFINITY};
  x.insert(x.end(), edges.begin(), edges.end());
  for_each_isa([&](cpu::Isa) {
    std::vector<float> y(x.size(), -1.0f);
    cpu::attention_exp(x.data(), y.data(), (int64_t)x.size());
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] < -87.33654f) {  // ln(FLT_MIN)
        CHECK(y[i] == 0.0f);
        continue;
      }
      const double want = std::exp((double)x[i]), err = std::fabs(y[i] - want) / want;
      if (err > worst) worst = err, at = i;
    }
    CHECK_MESSAGE(worst <= 2e-7, "relative error " << worst << " at x = " << x[at]);
    CHECK(y[x.size() - 10] == 1.0f);
    CHECK(y[x.size() - 9] == 1.0f);
  });
}

TEST_CASE("kv append writes every token's K and V rows to its mapped slot and nothing else") {
  Rng rng(206);
  KvCacheParams p;
  p.n_kv_heads = 2;
  p.head_dim = 63;
  p.block_size = 16;
  const int64_t num_slots = 5 * p.block_size, n_tokens = 37, row = (int64_t)p.n_kv_heads * p.head_dim;
  std::vector<int32_t> slots((size_t)num_slots);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng.engine());
  slots.resize((size_t)n_tokens);
  const std::vector<float> k = rng.floats((size_t)(n_tokens * row)), v = rng.floats(k.size());
  const std::vector<float> k0 = rng.floats((size_t)(num_slots * row)), v0 = rng.floats(k0.size());
  std::vector<float> want_k = k0, want_v = v0;
  ref::kv_append({k.data(), v.data(), slots.data(), n_tokens, want_k.data(), want_v.data(), DType::f32, num_slots, p});
  for_each_isa([&](cpu::Isa) {
    std::vector<float> got_k = k0, got_v = v0;
    cpu::kv_append({k.data(), v.data(), slots.data(), n_tokens, got_k.data(), got_v.data(), DType::f32, num_slots, p}, pool());
    CHECK(got_k == want_k);
    CHECK(got_v == want_v);
  });
}

// The pools' values rounded to t and stored as t (f16/bf16 words), and the
// same rounded values as f32: what attention over either must agree on.
struct RoundedPools {
  std::vector<uint16_t> k, v;
  std::vector<float> k_f32, v_f32;
};
RoundedPools round_pools(const Scenario& sc, DType t) {
  RoundedPools r{std::vector<uint16_t>(sc.k_pool.size()), std::vector<uint16_t>(sc.v_pool.size()), sc.k_pool, sc.v_pool};
  for (size_t i = 0; i < sc.k_pool.size(); ++i) {
    kernels::store_kv(r.k.data(), t, (int64_t)i, sc.k_pool[i]);
    kernels::store_kv(r.v.data(), t, (int64_t)i, sc.v_pool[i]);
    r.k_f32[i] = kernels::round_to_kv(t, sc.k_pool[i]);
    r.v_f32[i] = kernels::round_to_kv(t, sc.v_pool[i]);
  }
  return r;
}

// Widening f16/bf16 to f32 is exact and the folds are the f32 pools', so
// the bits are those of f32 pools holding the rounded values, on every ISA
// and path; and both stay within the f32 bound of the reference reading the
// 16-bit pools.
TEST_CASE("paged attention over f16 and bf16 pools equals f32 pools of the rounded values, bit for bit, on every ISA") {
  Rng rng(215);
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(name(t));
    for (const Scenario& sc : {Scenario(gqa(64, 16), {{700, 1}, {40, 3}, {451, 1}, {90, 17}}, rng),
                               Scenario(windowed(63, 8, 33, 0.0f), {{90, 17}, {451, 1}, {33, 33}, {5, 1}}, rng),
                               Scenario(gqa(128, 16), {{1000, 1}}, rng)}) {
      const RoundedPools r = round_pools(sc, t);
      check_pools_as_f32(sc, t, r);
    }
  }
}

TEST_CASE("kv append rounds to f16 and bf16 pools as core/half.h does, on every ISA, edge values and odd rows included") {
  Rng rng(216);
  KvCacheParams p;
  p.n_kv_heads = 3;
  p.head_dim = 13;  // rows of 39: every vector width's tail
  p.block_size = 4;
  const int64_t num_slots = 6 * p.block_size, n_tokens = 9, row = (int64_t)p.n_kv_heads * p.head_dim;
  std::vector<int32_t> slots((size_t)num_slots);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng.engine());
  slots.resize((size_t)n_tokens);
  slots[4] = kNoSlot;
  std::vector<float> k = rng.floats((size_t)(n_tokens * row), -1e5f, 1e5f), v = rng.floats(k.size(), -1e-5f, 1e-5f);
  const float edge[] = {1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f, 65519.0f, 65520.0f, -1e-7f, 6e-8f, 3e-8f,
                        -0.0f, INFINITY, -INFINITY, NAN, 1.00390625f, 1.01171875f, 3.4e38f};
  for (size_t i = 0; i < std::size(edge); ++i) k[i * 3] = edge[i];
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(name(t));
    std::vector<uint16_t> want_k((size_t)(num_slots * row), 0x5555), want_v = want_k;
    ref::kv_append({k.data(), v.data(), slots.data(), n_tokens, want_k.data(), want_v.data(), t, num_slots, p});
    for_each_isa([&](cpu::Isa) {
      std::vector<uint16_t> got_k((size_t)(num_slots * row), 0x5555), got_v = got_k;
      cpu::kv_append({k.data(), v.data(), slots.data(), n_tokens, got_k.data(), got_v.data(), t, num_slots, p}, pool());
      CHECK(got_k == want_k);
      CHECK(got_v == want_v);
    });
  }
}

}  // namespace
}  // namespace tessera::testing
