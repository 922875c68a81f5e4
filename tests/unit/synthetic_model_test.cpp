// The synthetic llama against an independent list of the tensors a llama
// needs, decoded through core's dequantize_row.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "engine/bench/synthetic_model.h"
#include "support/random.h"

using tessera::DType;
using tessera::Shape;
using tessera::SyntheticSpec;

namespace {

SyntheticSpec tiny_spec(DType t, int32_t dim = 64, uint64_t seed = 1) {
  SyntheticSpec s;
  s.weight_type = t;
  s.seed = seed;
  s.config.dim = dim;
  s.config.hidden_dim = 2 * dim + (dim >= 256 ? 256 : 32);
  s.config.n_layers = 2;
  s.config.n_heads = 4;
  s.config.n_kv_heads = 2;
  s.config.vocab_size = 96;
  s.config.context_length = 128;
  return s;
}

struct Expect {
  std::string name;
  Shape shape;
  bool norm;
};

std::vector<Expect> expected_tensors(const tessera::TransformerConfig& c) {
  const int64_t d = c.dim, f = c.hidden_dim, hd = d / c.n_heads, kv = hd * c.n_kv_heads;
  std::vector<Expect> e = {{"token_embd.weight", {c.vocab_size, d}, false}};
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    e.push_back({p + "attn_norm.weight", {d}, true});
    e.push_back({p + "attn_q.weight", {d, d}, false});
    e.push_back({p + "attn_k.weight", {kv, d}, false});
    e.push_back({p + "attn_v.weight", {kv, d}, false});
    e.push_back({p + "attn_output.weight", {d, d}, false});
    e.push_back({p + "ffn_norm.weight", {d}, true});
    e.push_back({p + "ffn_gate.weight", {f, d}, false});
    e.push_back({p + "ffn_up.weight", {f, d}, false});
    e.push_back({p + "ffn_down.weight", {d, f}, false});
  }
  e.push_back({"output_norm.weight", {d}, true});
  if (!c.tied_embeddings) e.push_back({"output.weight", {c.vocab_size, d}, false});
  return e;
}

const tessera::WeightTensor* lookup(const tessera::ModelWeights& w, const std::string& name) {
  for (const auto& t : w.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<float> decode(const tessera::WeightTensor& t) {
  std::vector<float> v((size_t)t.desc.shape.numel());
  tessera::dequantize_row(t.desc.dtype, t.data.data(), v.data(), (int64_t)v.size());
  return v;
}

}  // namespace

TEST_CASE("a synthetic llama holds every tensor with the right name, shape and type") {
  for (bool tied : {false, true}) {
    SyntheticSpec spec = tiny_spec(DType::q8_0);
    spec.config.tied_embeddings = tied;
    tessera::SerialFor pf;
    auto w = tessera::make_synthetic_llama(spec, pf);
    REQUIRE_MESSAGE(w.has_value(), w.status().message());
    CHECK(w->format == "synthetic");
    CHECK(w->source.rfind("synthetic:", 0) == 0);
    CHECK(w->config.dim == 64);
    const std::vector<Expect> expected = expected_tensors(spec.config);
    CHECK(w->tensors.size() == expected.size());
    for (const Expect& e : expected) {
      const tessera::WeightTensor* t = lookup(*w, e.name);
      REQUIRE_MESSAGE(t != nullptr, e.name);
      CHECK_MESSAGE(t->desc.shape == e.shape, e.name << " " << t->desc.shape.to_string());
      CHECK(t->desc.dtype == (e.norm ? DType::f32 : DType::q8_0));
      CHECK(t->desc.is_contiguous());
      CHECK(t->data.size() == t->desc.bytes());
    }
    CHECK((lookup(*w, "output.weight") == nullptr) == tied);
  }
}

TEST_CASE("synthetic tensors live in one allocation, 64-byte aligned and disjoint") {
  tessera::SerialFor pf;
  const SyntheticSpec spec = tiny_spec(DType::q4_0);
  auto w = tessera::make_synthetic_llama(spec, pf);
  REQUIRE(w.has_value());
  const std::byte* base = static_cast<const std::byte*>(w->storage.get());
  const uint64_t total = tessera::synthetic_model_bytes(spec);
  const std::byte* prev_end = base;
  for (const auto& t : w->tensors) {
    CHECK(reinterpret_cast<uintptr_t>(t.data.data()) % 64 == 0);
    CHECK(t.data.data() >= prev_end);
    prev_end = t.data.data() + t.data.size();
  }
  CHECK(prev_end <= base + total);
}

TEST_CASE("synthetic weights are finite, norms are 1, and matrices decode to zero mean and std 1/sqrt(K)") {
  struct Case {
    DType type;
    int32_t dim;
  };
  for (Case c : {Case{DType::q8_0, 64}, Case{DType::q4_0, 64}, Case{DType::f32, 64}, Case{DType::f16, 64},
                 Case{DType::bf16, 64}, Case{DType::q4_K, 256}}) {
    CAPTURE(tessera::name(c.type));
    tessera::ThreadPool pf(2);
    tessera::testing::Rng rng(301);
    auto w = tessera::make_synthetic_llama(tiny_spec(c.type, c.dim, rng.engine()()), pf);
    REQUIRE_MESSAGE(w.has_value(), w.status().message());
    for (const auto& t : w->tensors) {
      CAPTURE(t.name);
      const std::vector<float> v = decode(t);
      double sum = 0, sq = 0;
      for (float x : v) {
        REQUIRE(std::isfinite(x));
        sum += x;
        sq += (double)x * x;
      }
      const double n = (double)v.size();
      if (t.name.find("norm") != std::string::npos) {
        CHECK(sum == n);
        CHECK(sq == n);
        continue;
      }
      const double target = 1.0 / std::sqrt((double)t.desc.shape.last());
      const double mean = sum / n, std = std::sqrt(sq / n - mean * mean);
      // Thousands of samples per tensor: the std is within a few percent.
      CHECK(std == doctest::Approx(target).epsilon(0.08));
      CHECK(std::fabs(mean) < 0.15 * target);  // > 6 standard errors
    }
  }
}

TEST_CASE("a synthetic model is a function of its seed, not of the thread count") {
  const SyntheticSpec spec = tiny_spec(DType::q8_0, 128, 42);
  tessera::SerialFor serial;
  tessera::ThreadPool pool(2);
  auto a = tessera::make_synthetic_llama(spec, serial);
  auto b = tessera::make_synthetic_llama(spec, pool);
  SyntheticSpec other = spec;
  other.seed = 43;
  auto c = tessera::make_synthetic_llama(other, pool);
  REQUIRE((a.has_value() && b.has_value() && c.has_value()));
  const uint64_t bytes = tessera::synthetic_model_bytes(spec);
  CHECK(std::memcmp(a->storage.get(), b->storage.get(), bytes) == 0);
  CHECK(std::memcmp(a->storage.get(), c->storage.get(), bytes) != 0);
  // Distinct tensors do not repeat each other's codes.
  const auto* q = lookup(*a, "blk.0.attn_q.weight");
  const auto* o = lookup(*a, "blk.0.attn_output.weight");
  CHECK(std::memcmp(q->data.data(), o->data.data(), q->data.size()) != 0);
}

TEST_CASE("the default bench model is over 1.5 GiB in q8_0 and in q4_0, far beyond any cache") {
  // Hand-counted: 24 layers of 60,817,408 weights + 4,096 norm floats, two
  // 32000 x 2048 tables and a 2048 norm; q8_0 is 34 bytes per 32, q4_0 18.
  const SyntheticSpec q8 = tessera::default_bench_spec(DType::q8_0);
  CHECK(q8.config.n_layers == 24);
  CHECK(q8.config.dim == 2048);
  CHECK(q8.config.hidden_dim == 8192);
  CHECK(q8.config.n_heads == 32);
  CHECK(q8.config.n_kv_heads == 8);
  CHECK(q8.config.vocab_size == 32000);
  CHECK_FALSE(q8.config.tied_embeddings);
  CHECK(tessera::synthetic_model_bytes(q8) == 1690509312ull);
  const SyntheticSpec q4 = tessera::default_bench_spec(DType::q4_0);
  CHECK(q4.config.n_layers == 48);
  CHECK(tessera::synthetic_model_bytes(q4) == 1716592640ull);
  CHECK(tessera::synthetic_model_bytes(tessera::default_bench_spec(DType::q4_K)) == 1716592640ull);
  CHECK(tessera::synthetic_model_bytes(tessera::default_bench_spec(DType::f16)) == 3181780992ull);
  for (const SyntheticSpec& s : {q8, q4}) CHECK(tessera::synthetic_model_bytes(s) > (uint64_t{3} << 29));
}

TEST_CASE("invalid synthetic specs are refused with the field named") {
  tessera::SerialFor pf;
  SyntheticSpec s = tiny_spec(DType::q8_0);
  s.config.n_heads = 5;
  auto a = tessera::make_synthetic_llama(s, pf);
  REQUIRE_FALSE(a.has_value());
  CHECK(a.status().message().find("n_heads") != std::string::npos);

  s = tiny_spec(DType::q4_K);  // dim 64 is not a whole q4_K block
  auto b = tessera::make_synthetic_llama(s, pf);
  REQUIRE_FALSE(b.has_value());
  CHECK(b.status().code() == tessera::StatusCode::invalid_argument);
  CHECK(b.status().message().find("dim 64") != std::string::npos);
  CHECK(tessera::synthetic_model_bytes(s) == 0);

  s = tiny_spec(DType::i32);
  CHECK(tessera::make_synthetic_llama(s, pf).status().code() == tessera::StatusCode::unsupported);
  s = tiny_spec(DType::q8_0);
  s.config.vocab_size = 0;
  CHECK(tessera::make_synthetic_llama(s, pf).status().message().find("vocab_size") != std::string::npos);
}

TEST_CASE("a synthetic weight type other than q8_0, q4_0, f16 and f32 is refused naming the flag and the accepted ones") {
  for (const char* ok : {"q8_0", "q4_0", "f16", "f32"}) CHECK(tessera::synthetic_weight_type(ok, "-m x").has_value());
  for (const char* bad : {"", "q4_K", "bf16", "Q8_0 "}) {
    const auto t = tessera::synthetic_weight_type(bad, "-m synthetic:" + std::string(bad));
    REQUIRE_FALSE(t.has_value());
    CHECK(t.status().message().find("-m synthetic:") != std::string::npos);
    CHECK(t.status().message().find("expected q8_0, q4_0, f16 or f32") != std::string::npos);
  }
}
