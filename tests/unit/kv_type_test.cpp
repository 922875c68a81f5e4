// The KV pools' element type (--kv-type): how "auto" decides, that a budget
// buys twice the blocks of f16 or bf16 as of f32, that the graph's pools
// carry the type, and how far stories260K's logits move from run.c's (f32)
// when its K/V are stored in f16 or bf16.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>

#include "engine/kv/kv_type.h"
#include "engine/models/load_model.h"
#include "engine/runtime/session.h"
#include "support/reference_cases.h"

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

TEST_CASE("--kv-type: auto is f32 for an all-f32 model and f16 for others unless the device lacks f16 pools; names are taken as given") {
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
  const auto bad = resolve_kv_type("q8_0", *tiny);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.status().message() == "--kv-type: 'q8_0' is not one of auto, f32, f16, bf16");
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
// 1.1e-3 (f16) and 8.9e-3 (bf16) of the row's largest logit over 48 steps,
// against 1e-4 for f32 pools (runner_steps_test.cpp); the bounds allow 3x.
TEST_CASE("stories260K's logits with f16 and bf16 KV stay within a stated bound of run.c's f32 logits") {
  constexpr int kRows = 48, kVocab = 512;
  std::ifstream f(TESSERA_SHARED_DIR "/reference/stories260K.logits.f32", std::ios::binary);
  std::vector<float> ref((size_t)kRows * kVocab);
  f.read(reinterpret_cast<char*>(ref.data()), (std::streamsize)(ref.size() * sizeof(float)));
  REQUIRE(f.gcount() == (std::streamsize)(ref.size() * sizeof(float)));
  const auto w = load("models/stories260K.bin");
  for (auto [t, bound] : {std::pair{DType::f16, 3.5e-3}, std::pair{DType::bf16, 2.7e-2}}) {
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
