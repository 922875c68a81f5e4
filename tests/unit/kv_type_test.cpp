// The KV pools' element type (--kv-type): how "auto" decides, that a budget
// buys twice the blocks of f16 or bf16 as of f32, that the graph's pools
// carry the type, and how far stories260K's logits move from run.c's (f32)
// when its K/V are stored in f16 or bf16.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <memory>

#include "core/thread_pool.h"
#include "core/read_bandwidth.h"
#include "engine/kv/kv_type.h"
#include "kernels/cpu/cpu_kernels.h"
#include "engine/models/load_model.h"
#include "engine/runtime/session.h"
#include "support/reference_cases.h"
#include "support/requirements.h"

using namespace tessera;

namespace {

std::shared_ptr<const ModelWeights> load(const char* rel) {
  auto w = load_model(std::string(TESSERA_SHARED_DIR) + "/" + rel);
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  return std::make_shared<const ModelWeights>(std::move(*w));
}

// A kernel table that runs everything but 16-bit KV pools.
class F32KvOnly final : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override {
    if (q.kv_dtype != DType::f32) return {false, "", "f32 pools only"};
    return {true, "any", ""};
  }
};

}  // namespace

TEST_CASE("--kv-type: auto is f32 for an all-f32 model and f16 for others unless the device lacks f16 pools, and names are taken as given") {
  const auto stories = load("models/stories260K.bin");           // llama2.c: f32 weights
  const auto tiny = load("models/llama-2-tiny-random.gguf");      // f16 weights
  CHECK(*resolve_kv_type("auto", *stories) == DType::f32);
  CHECK(*resolve_kv_type("", *stories) == DType::f32);
  CHECK(*resolve_kv_type("auto", *tiny) == DType::f16);
  const F32KvOnly table;
  CHECK(*resolve_kv_type("auto", *tiny, &table) == DType::f32);
  // A type asked for by name is never changed (placement deals with a device that lacks it).
  CHECK(*resolve_kv_type("bf16", *tiny, &table) == DType::bf16);
  CHECK(*resolve_kv_type("f16", *stories) == DType::f16);
  CHECK(*resolve_kv_type("f32", *tiny) == DType::f32);
  const auto bad = resolve_kv_type("q4", *tiny);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.status().message() == "--kv-type: 'q4' is not one of auto, f32, f16, bf16, q8_0, fp8_e4m3");
  // The 8-bit types' blocks are 32 elements of one head: stories260K's heads are 8 wide.
  const auto llama = load("models/zoo/llama-f32.gguf");  // head_dim 32
  CHECK(*resolve_kv_type("q8_0", *llama) == DType::q8_0);
  CHECK(*resolve_kv_type("fp8_e4m3", *llama) == DType::fp8_e4m3);
  const auto narrow = resolve_kv_type("fp8_e4m3", *stories);
  REQUIRE_FALSE(narrow.has_value());
  CHECK(narrow.status().message() ==
        "--kv-type fp8_e4m3: the model's head_dim 8 is not a multiple of 32 (the block of fp8_e4m3 KV pools); use f32, f16 or bf16");
}

TEST_CASE("one KV budget holds 256/68 times the blocks in q8_0 or fp8_e4m3 pools as in f32 (34 bytes per 32 elements)") {
  const auto w = load("models/zoo/llama-f32.gguf");  // 2 layers, 2 KV heads of 32: rows of 64 elements
  RunnerOptions o;
  o.max_context = 64;
  // 16-token blocks over 2 layers, K and V: 16 KiB in f32 (rows of 256 bytes), 4352 bytes in 8 bits (rows of 68).
  o.kv_cache_bytes = 40 * 16384;
  for (DType t : {DType::f32, DType::q8_0, DType::fp8_e4m3}) {
    CAPTURE(name(t));
    o.kv_type = std::string(name(t));
    auto rc = open_runner(w, o);
    REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
    CHECK(rc->kv->spec().dtype == t);
    CHECK(rc->kv->spec().num_blocks == (t == DType::f32 ? 40 : 40 * 16384 / 4352));
    CHECK(rc->kv->bytes() == (uint64_t)rc->kv->spec().num_blocks * (t == DType::f32 ? 16384 : 4352));
    for (const auto& v : rc->runner->graph().values)
      if (v.kind == graph::ValueKind::kv_pool) CHECK(v.desc.dtype == t);
  }
}

TEST_CASE("one KV budget holds twice the blocks in f16 or bf16 pools as in f32, and the graph's pools are of that type") {
  const auto w = load("models/stories260K.bin");
  RunnerOptions o;
  o.max_context = 64;
  // stories260K: 5 layers, K and V, 4 KV heads of 8: 16-token blocks of 20 KiB in f32 over every layer.
  o.kv_cache_bytes = 40 * 20480;
  int32_t f32_blocks = 0;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(name(t));
    o.kv_type = std::string(name(t));
    auto rc = open_runner(w, o);
    REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
    CHECK(rc->kv->spec().dtype == t);
    if (t == DType::f32) f32_blocks = rc->kv->spec().num_blocks;
    CHECK(f32_blocks == 40);
    CHECK(rc->kv->spec().num_blocks == (t == DType::f32 ? 40 : 80));
    CHECK(rc->kv->bytes() == (uint64_t)o.kv_cache_bytes);
    for (const auto& v : rc->runner->graph().values)
      if (v.kind == graph::ValueKind::kv_pool) CHECK(v.desc.dtype == t);
  }
}

// run.c's logits (f32 K/V) for the ids it fed: the f16 and bf16 pools move
// them by the rounding of K and V alone. Measured on this host: at most
// 2.8e-3 (f16) and 3.4e-2 (bf16) of the row's largest logit over 48 steps,
// against 1e-4 for f32 pools (runner_steps_test.cpp); the bounds allow about 2x.
TEST_CASE("stories260K's logits with f16 and bf16 KV stay within a stated bound of run.c's f32 logits") {
  constexpr int kRows = 48, kVocab = 512;
  std::ifstream f(TESSERA_SHARED_DIR "/reference/stories260K.logits.f32", std::ios::binary);
  std::vector<float> ref((size_t)kRows * kVocab);
  f.read(reinterpret_cast<char*>(ref.data()), (std::streamsize)(ref.size() * sizeof(float)));
  REQUIRE(f.gcount() == (std::streamsize)(ref.size() * sizeof(float)));
  const auto w = load("models/stories260K.bin");
  for (auto [t, bound] : {std::pair{DType::f16, 6e-3}, std::pair{DType::bf16, 7e-2}}) {
    CAPTURE(name(t));
    RunnerOptions o;
    o.max_context = 64;
    o.kv_type = std::string(name(t));
    auto rc = open_runner(w, o);
    REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
    auto s = Session::create(*rc->runner, *rc->kv);
    REQUIRE(s.has_value());
    // The fifth reference line's ids, as run.c fed them (runner_steps_test.cpp).
    const auto cases = testing::read_id_cases(TESSERA_SHARED_DIR "/reference/stories260K.greedy.txt");
    REQUIRE(cases.size() >= 5);
    const std::vector<int32_t>& ids = cases[4].full_ids;
    REQUIRE(ids.size() >= (size_t)kRows);
    REQUIRE((*s)->feed(std::span<const int32_t>(ids.data(), kRows), true).is_ok());
    const auto& all = (*s)->all_logits();
    REQUIRE(all.size() == ref.size());
    double worst = 0;
    for (int r = 0; r < kRows; ++r) {
      double diff = 0, scale = 0;
      for (int i = 0; i < kVocab; ++i) {
        diff = std::max(diff, (double)std::fabs(all[(size_t)(r * kVocab + i)] - ref[(size_t)(r * kVocab + i)]));
        scale = std::max(scale, (double)std::fabs(ref[(size_t)(r * kVocab + i)]));
      }
      worst = std::max(worst, diff / scale);
    }
    MESSAGE(name(t) << " KV: largest logit error " << worst << " of the row's largest logit");
    CHECK(worst <= bound);
  }
}

// Not a check: the figures docs/performance.md quotes. Run with
// TESSERA_TIMING=1 -tc='*timing*'. One decode token over an 8K context, 32
// heads over 8 KV heads of 128, on every thread; the pools are 4 times the
// context, each rep reading another quarter, so that no rep finds its K/V
// in the last-level cache. GB/s of K/V bytes against the streaming-read roof.
TEST_CASE("timing: CPU decode attention at 8K context over f32, f16 and bf16 pools, against the read roof" *
          testing::needs(testing::timing_cases())) {
  ThreadPool pool;
  AttentionParams p{32, 8, 128, 16, 0.0f, true};
  const int32_t ctx = 8192, blocks = ctx / p.block_size, copies = 4;
  const int64_t kv_row = (int64_t)p.n_kv_heads * p.head_dim, slots = (int64_t)copies * ctx;
  std::vector<float> q((size_t)(p.n_heads * p.head_dim), 0.01f), out(q.size());
  const int32_t pos = ctx - 1, qs[2] = {0, 1}, lens[1] = {ctx};
  std::vector<std::vector<int32_t>> tables(copies);
  for (int32_t c = 0; c < copies; ++c)
    for (int32_t b = 0; b < blocks; ++b) tables[(size_t)c].push_back(c * blocks + b);
  std::vector<std::byte> ws(kernels::cpu::attention_workspace_bytes(p, {1, 1, ctx, pool.num_threads()}));
  const BandwidthResult roof = measure_read_bandwidth(pool, std::max<uint64_t>(4 * last_level_cache_bytes(), 1ull << 30));
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const uint64_t pool_bytes = bytes_for(t, slots * kv_row);
    std::vector<std::byte> k(pool_bytes), v(pool_bytes);
    for (size_t i = 0; i < pool_bytes; ++i) k[i] = v[i] = std::byte((i * 7 + 3) & 0x3f);  // small finite values in every type
    kernels::AttentionArgs a;
    a.q = q.data();
    a.out = out.data();
    a.n_tokens = 1;
    a.k_pool = k.data();
    a.v_pool = v.data();
    a.kv_dtype = t;
    a.positions = &pos;
    a.query_start = qs;
    a.seq_lens = lens;
    a.n_seqs = 1;
    a.max_blocks_per_seq = blocks;
    a.p = p;
    a.workspace = ws.data();
    std::vector<double> ms;
    for (int rep = 0; rep < 40; ++rep) {
      a.block_tables = tables[(size_t)(rep % copies)].data();
      const auto t0 = std::chrono::steady_clock::now();
      kernels::cpu::paged_attention(a, pool);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double kv_bytes = 2.0 * ctx * (double)bytes_for(t, kv_row), med = ms[ms.size() / 2];
    std::printf("decode attention 8K ctx, 32/8 heads x 128, %-4s KV: %6.2f ms median, %5.1f GB/s of K/V, %5.1f%% of the %.1f GB/s read roof (%d threads)\n",
                std::string(name(t)).c_str(), med, kv_bytes / med / 1e6, 100.0 * kv_bytes / med / 1e6 / roof.read_GBps,
                roof.read_GBps, pool.num_threads());
  }
}
