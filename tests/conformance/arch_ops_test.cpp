// The ops the architectures beyond llama brought (head_rms_norm for qwen3,
// scale and softcap for gemma2, RoPE with freq_scale and llama3's
// frequency factors): each CPU kernel against kernels/reference on fresh
// random inputs at odd shapes (the seed is printed; TESSERA_TEST_SEED
// replays it), on every runnable ISA, in place where the memory plan may
// place them.
#include <cmath>
#include <string>
#include <vector>

#include "conformance.h"

namespace tessera::testing {
namespace {

using kernels::HeadRmsNormArgs, kernels::RopeKvAppendArgs, kernels::ScalarOpArgs;

}  // namespace

TEST_CASE("head_rms_norm normalizes each head on its own and matches the reference at odd shapes") {
  Rng rng(401);
  for_each_isa([&](cpu::Isa) {
    for (auto [rows, heads, hd] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 5, 7}, {17, 4, 32}, {2, 3, 63}, {5, 2, 128}}) {
      CAPTURE(rows);
      CAPTURE(heads);
      CAPTURE(hd);
      const int64_t n = rows * heads * hd;
      const auto x = rng.floats((size_t)n, -4, 4), w = rng.floats((size_t)hd, -2, 2);
      std::vector<float> got((size_t)n), want((size_t)n);
      const RmsNormParams p{rng.uniform(1e-7f, 1e-5f)};
      cpu::head_rms_norm(HeadRmsNormArgs{x.data(), w.data(), got.data(), rows, heads, hd, p}, pool());
      ref::head_rms_norm(HeadRmsNormArgs{x.data(), w.data(), want.data(), rows, heads, hd, p});
      CHECK(rel_error(got, want) < 1e-6);
      // Each head really is its own row: scaling one head's input leaves the others' outputs alone.
      if (heads > 1) {
        std::vector<float> x2 = x, got2((size_t)n);
        for (int64_t j = 0; j < hd; ++j) x2[(size_t)j] *= 10.0f;  // row 0, head 0
        cpu::head_rms_norm(HeadRmsNormArgs{x2.data(), w.data(), got2.data(), rows, heads, hd, p}, pool());
        CHECK(std::equal(got.begin() + hd, got.end(), got2.begin() + hd));
      }
      // In place, as the memory plan may place it.
      std::vector<float> in_place = x;
      cpu::head_rms_norm(HeadRmsNormArgs{in_place.data(), w.data(), in_place.data(), rows, heads, hd, p}, pool());
      CHECK(in_place == got);
    }
  });
}

TEST_CASE("scale and softcap match the reference at odd sizes, saturating inputs included") {
  Rng rng(402);
  for_each_isa([&](cpu::Isa) {
    for (int64_t n : {1, 7, 513, 16411, 40000}) {
      CAPTURE(n);
      const auto x = rng.floats((size_t)n, -200, 200);
      std::vector<float> got((size_t)n), want((size_t)n);
      const float s = rng.uniform(0.01f, 40.0f);
      CAPTURE(s);
      cpu::scale(ScalarOpArgs{x.data(), got.data(), n, s}, pool());
      ref::scale(ScalarOpArgs{x.data(), want.data(), n, s});
      CHECK(got == want);  // one f32 product each: exact
      cpu::softcap(ScalarOpArgs{x.data(), got.data(), n, s}, pool());
      ref::softcap(ScalarOpArgs{x.data(), want.data(), n, s});
      // f32 tanh against f64: a few ulps of the cap, absolute (outputs lie in (-cap, cap)).
      CHECK(max_abs_diff(got, want) <= 4e-7 * s);
      for (float y : got) CHECK(std::fabs(y) <= s);
      std::vector<float> in_place = x;
      cpu::softcap(ScalarOpArgs{in_place.data(), in_place.data(), n, s}, pool());
      CHECK(in_place == got);
    }
  });
}

TEST_CASE("softcap: known values, and the identity far below the cap") {
  const std::vector<float> x = {-1000.0f, -30.0f, 0.0f, 0.001f, 15.0f, 30.0f, 1000.0f};
  std::vector<float> y(x.size());
  ref::softcap({x.data(), y.data(), (int64_t)x.size(), 30.0f});
  const double want[] = {-30.0, -22.8478, 0.0, 0.001, 13.8635, 22.8478, 30.0};
  for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("rope with freq_scale and per-pair frequency factors matches the reference, both layouts, partial rotary") {
  Rng rng(403);
  for_each_isa([&](cpu::Isa) {
    for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half_split}) {
      for (auto [heads, hd, rot] : {std::tuple<int32_t, int32_t, int32_t>{1, 2, 2}, {3, 16, 10}, {4, 64, 64}, {2, 63, 32}}) {
        CAPTURE(heads);
        CAPTURE(hd);
        CAPTURE(rot);
        const int64_t n = rng.integer(1, 19);
        RopeParams p{heads, hd, rot, rng.uniform(100.0f, 1e6f), layout};
        p.freq_scale = rng.integer(0, 1) ? 1.0f : rng.uniform(0.1f, 1.0f);
        CAPTURE(p.freq_scale);
        std::vector<float> factors = rng.floats((size_t)rot / 2, 1.0f, 8.0f);
        std::vector<int32_t> pos((size_t)n);
        for (auto& q : pos) q = rng.integer(0, 9000);
        const auto x = rng.floats((size_t)(n * heads * hd), -3, 3);
        for (const float* ff : {static_cast<const float*>(nullptr), static_cast<const float*>(factors.data())}) {
          CAPTURE(ff != nullptr);
          std::vector<float> got = x, want = x;
          cpu::rope({got.data(), pos.data(), n, p, nullptr, 0, ff}, pool());
          ref::rope({want.data(), pos.data(), n, p, nullptr, 0, ff});
          CHECK(max_abs_diff(got, want) <= 1e-5);
          // The unrotated tail of each head is untouched.
          for (int64_t t = 0; t < n; ++t)
            for (int h = 0; h < heads; ++h)
              for (int d = rot; d < hd; ++d) {
                const size_t i = (size_t)((t * heads + h) * hd + d);
                CHECK(got[i] == x[i]);
              }
        }
        // Factors of 1 and freq_scale 1 are the plain rotation, bit for bit.
        if (p.freq_scale == 1.0f) {
          std::vector<float> ones((size_t)rot / 2, 1.0f), a = x, b = x;
          cpu::rope({a.data(), pos.data(), n, p, nullptr, 0, ones.data()}, pool());
          cpu::rope({b.data(), pos.data(), n, p}, pool());
          CHECK(a == b);
        }
      }
    }
  });
}

TEST_CASE("rope frequency factors divide each pair's angle as llama.cpp does (llama3's rope_freqs)") {
  // One head of 4 rotated dims: pair i turns by position * theta^(-2i/4) / factor[i] * freq_scale.
  RopeParams p{1, 4, 4, 10000.0f, RopeLayout::half_split};
  p.freq_scale = 0.5f;
  const std::vector<float> factors = {2.0f, 8.0f};
  std::vector<float> x = {1.0f, 1.0f, 0.0f, 0.0f};
  const std::vector<int32_t> pos = {7};
  ref::rope({x.data(), pos.data(), 1, p, nullptr, 0, factors.data()});
  const double a0 = 7.0 / 2.0 * 0.5, a1 = 7.0 * std::pow(10000.0, -0.5) / 8.0 * 0.5;
  CHECK(x[0] == doctest::Approx(std::cos(a0)).epsilon(1e-6));
  CHECK(x[2] == doctest::Approx(std::sin(a0)).epsilon(1e-6));
  CHECK(x[1] == doctest::Approx(std::cos(a1)).epsilon(1e-6));
  CHECK(x[3] == doctest::Approx(std::sin(a1)).epsilon(1e-6));
}

TEST_CASE("rope_kv_append with frequency factors equals rope, rope and kv_append, on the CPU and the reference") {
  Rng rng(404);
  for_each_isa([&](cpu::Isa) {
    const int32_t heads = 4, kv_heads = 2, hd = 24, rot = 24, bs = 8;
    const int64_t n = 11, slots = 64;
    RopeKvAppendParams p{{heads, hd, rot, 500000.0f, RopeLayout::interleaved}, {kv_heads, hd, bs}};
    p.rope.freq_scale = 0.25f;
    const auto factors = rng.floats((size_t)rot / 2, 1.0f, 8.0f);
    const auto q = rng.floats((size_t)(n * heads * hd)), k = rng.floats((size_t)(n * kv_heads * hd)), v = rng.floats(k.size());
    std::vector<int32_t> pos((size_t)n), slot((size_t)n);
    for (int64_t t = 0; t < n; ++t) pos[(size_t)t] = (int32_t)(100 + t), slot[(size_t)t] = (int32_t)(3 * t % slots);
    const auto pool0 = rng.floats((size_t)(slots * kv_heads * hd));
    auto run = [&](bool reference) {
      std::vector<float> q_out((size_t)q.size()), k_rot(k.size()), kp = pool0, vp = pool0;
      RopeKvAppendArgs a;
      a.q = q.data();
      a.q_out = q_out.data();
      a.k = k.data();
      a.v = v.data();
      a.k_rot = k_rot.data();
      a.positions = pos.data();
      a.slot_mapping = slot.data();
      a.n_tokens = n;
      a.k_pool = kp.data();
      a.v_pool = vp.data();
      a.num_slots = slots;
      a.p = p;
      a.freq_factors = factors.data();
      if (reference) ref::rope_kv_append(a);
      else cpu::rope_kv_append(a, pool());
      return std::vector<std::vector<float>>{q_out, kp, vp};
    };
    const auto got = run(false), want = run(true);
    CHECK(max_abs_diff(got[0], want[0]) <= 1e-5);
    CHECK(max_abs_diff(got[1], want[1]) <= 1e-5);
    CHECK(got[2] == want[2]);
    // The unfused CPU ops, bit for bit.
    std::vector<float> q2 = q, k2 = k, kp = pool0, vp = pool0;
    RopeParams rk = p.rope;
    rk.n_heads = kv_heads;
    cpu::rope({k2.data(), pos.data(), n, rk, nullptr, 0, factors.data()}, pool());
    cpu::kv_append({k2.data(), v.data(), slot.data(), n, kp.data(), vp.data(), DType::f32, slots, p.kv}, pool());
    cpu::rope({q2.data(), pos.data(), n, p.rope, nullptr, 0, factors.data()}, pool());
    CHECK(got[0] == q2);
    CHECK(got[1] == kp);
  });
}

}  // namespace tessera::testing

namespace tessera::testing {

TEST_CASE("gelu_mul is ggml's CPU GeGLU: the f16 table of the tanh GELU, saturating outside (-10, 10)") {
  Rng rng(405);
  for_each_isa([&](cpu::Isa) {
    for (int64_t n : {1, 7, 513, 16411, 40000}) {
      CAPTURE(n);
      const auto gate = rng.floats((size_t)n, -12, 12), up = rng.floats((size_t)n, -3, 3);
      std::vector<float> got((size_t)n), want((size_t)n);
      cpu::gelu_mul({gate.data(), up.data(), got.data(), n}, pool());
      ref::gelu_mul({gate.data(), up.data(), want.data(), n});
      // Both are ggml's f32 formula rounded to f16 (the reference per element,
      // the CPU from its table); a compiler contracting the formula into
      // another order of FMAs may move an f16 tie: one f16 step apart at most
      // (2^-10 relative, 2^-24 among the subnormals), times |up| <= 3, rarely.
      size_t differ = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double d = std::fabs((double)got[(size_t)i] - want[(size_t)i]);
        CHECK(d <= std::fabs((double)want[(size_t)i]) / 1024 + 3 * 0x1p-24);
        differ += d != 0;
      }
      CHECK(differ <= (size_t)n / 100 + 1);  // rarely: only where f32 and f64 round to different sides of an f16 tie
      std::vector<float> in_place = up;
      cpu::gelu_mul({gate.data(), in_place.data(), in_place.data(), n}, pool());
      CHECK(in_place == got);
    }
  });
}

TEST_CASE("gelu_mul: known values of ggml's f16 GELU") {
  // gelu(1) = 0.841192 -> f16 0.84130859375; gelu(-1) = -0.158808 -> f16 -0.15881347656;
  // 0.1 rounds to f16 0.0999755859375 first; beyond +-10 the GELU is x or 0.
  const std::vector<float> gate = {1.0f, -1.0f, 0.1f, 10.0f, 12.5f, -10.0f, -11.0f, 0.0f};
  const std::vector<float> up(gate.size(), 2.0f);
  std::vector<float> y(gate.size()), c(gate.size());
  ref::gelu_mul({gate.data(), up.data(), y.data(), (int64_t)gate.size()});
  cpu::gelu_mul({gate.data(), up.data(), c.data(), (int64_t)gate.size()}, pool());
  const float want[] = {2 * 0.84130859375f, 2 * -0.1588134765625f, 2 * 0.053955078125f, 20.0f, 25.0f, 0.0f, 0.0f, 0.0f};
  for (size_t i = 0; i < gate.size(); ++i) {
    CAPTURE(gate[i]);
    CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-6));
    CHECK(c[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

}  // namespace tessera::testing
