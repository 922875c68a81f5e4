// The 8-bit KV pools (--kv-type q8_0, fp8_e4m3): the E4M3 codec against a
// brute-force nearest-value oracle, the CPU's quantizing append against the
// reference byte for byte, and the CPU's attention over the blocks against
// the reference over the same blocks, every runnable ISA forced in turn.
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "attention_scenario.h"
#include "conformance.h"
#include "kernels/kv_element.h"

namespace tessera::testing {
namespace {

constexpr DType kBlockTypes[] = {DType::q8_0, DType::fp8_e4m3};

// E4M3 by its definition (bias 7, subnormals m * 2^-9), not by the codec's arithmetic.
double e4m3_value(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double mag = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return code & 0x80 ? -mag : mag;
}

// The nearest finite code to x (ties to the even code), saturating at 448.
int nearest_e4m3(float x) {
  int best = 0;
  double best_err = INFINITY;
  for (int c = 0; c < 0x7F; ++c) {  // the positive finite codes, 0x7F (NaN) excluded
    const double err = std::fabs(std::fabs((double)x) - e4m3_value(c));
    if (err < best_err || (err == best_err && (c & 1) == 0)) best = c, best_err = err;
  }
  return std::signbit(x) ? best | 0x80 : best;
}

TEST_CASE("fp8_e4m3 encodes to the nearest value, ties to even, saturating at 448, and decodes every code by the OCP definition") {
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    if ((c & 0x7F) == 0x7F)
      CHECK(std::isnan(kernels::fp8_e4m3_to_f32((uint8_t)c)));
    else
      CHECK((double)kernels::fp8_e4m3_to_f32((uint8_t)c) == e4m3_value(c));
  }
  Rng rng(901);
  std::vector<float> xs = {0.0f, -0.0f, 448.0f, 449.0f, 464.0f, 1e9f, -1e9f, 0x1p-9f, 0x1p-10f, 0x3p-11f, 0x1p-6f,
                           0x1.fp-7f, 1.0625f, 1.1875f, 240.0f, 232.0f, -0.1f};
  for (int i = 0; i < 20000; ++i) xs.push_back(rng.uniform(-1.0f, 1.0f) * std::ldexp(1.0f, rng.integer(-12, 9)));
  // Every midpoint between neighbouring codes: the ties.
  for (int c = 0; c < 0x7E; ++c) xs.push_back((float)((e4m3_value(c) + e4m3_value(c + 1)) / 2));
  for (float x : xs) {
    CAPTURE(x);
    CHECK((int)kernels::f32_to_fp8_e4m3(x) == nearest_e4m3(x));
  }
  CHECK(kernels::f32_to_fp8_e4m3(NAN) == 0x7F);
  CHECK(kernels::f32_to_fp8_e4m3(INFINITY) == 0x7E);
}

TEST_CASE("q8_0 and fp8_e4m3 pool blocks scale by amax / 127 and amax / 448 and read back within half a step") {
  Rng rng(902);
  for (DType t : kBlockTypes) {
    CAPTURE(name(t));
    for (float range : {1e-3f, 1.0f, 300.0f}) {
      std::vector<float> x = rng.floats(64, -range, range);
      std::fill(x.begin() + 32, x.end(), 0.0f);  // an all-zero block: scale 0, values 0
      std::vector<std::byte> b(bytes_for(t, 64));
      kernels::store_kv_row(b.data(), t, 0, x.data(), 64);
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[(size_t)j]));
      uint16_t d;
      std::memcpy(&d, b.data(), 2);
      CHECK(d == f32_to_f16(amax / (t == DType::q8_0 ? 127.0f : 448.0f)));
      const double step = f16_to_f32(d) * (t == DType::q8_0 ? 1.0 : 1.0 / 8.0);  // fp8: 2^-3 relative at the top
      for (int j = 0; j < 32; ++j) {
        const double y = kernels::load_kv(b.data(), t, j), xj = x[(size_t)j];
        // q8_0 rounds x / d by the unrounded d and reads back with the f16 one:
        // up to 127 times half an f16 ulp of d more (2^-25 absolute where d is subnormal).
        const double tol = t == DType::q8_0 ? step * 0.5 + amax * 1e-3 + 127.0 * 0x1p-25
                                            : std::fmax(std::fabs(xj) / 16.0 * 1.001, f16_to_f32(d) * 0x1p-10);
        CHECK_MESSAGE(std::fabs(y - xj) <= tol, "j " << j << ": " << xj << " read back as " << y);
      }
      for (int j = 32; j < 64; ++j) CHECK(kernels::load_kv(b.data(), t, j) == 0.0f);
    }
  }
}

// The CPU quantizes with kv_element.h's scalar code (one row a token), so
// its bytes are the reference's exactly.
TEST_CASE("kv append quantizes q8_0 and fp8_e4m3 rows as the reference does, byte for byte, on every ISA") {
  Rng rng(903);
  KvCacheParams p;
  p.n_kv_heads = 3;
  p.head_dim = 64;
  p.block_size = 16;
  const int64_t num_slots = 4 * p.block_size, n_tokens = 11, row = (int64_t)p.n_kv_heads * p.head_dim;
  std::vector<int32_t> slots((size_t)num_slots);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng.engine());
  slots.resize((size_t)n_tokens);
  slots[3] = kNoSlot;
  std::vector<float> k = rng.floats((size_t)(n_tokens * row), -40.0f, 40.0f), v = rng.floats(k.size(), -1e-3f, 1e-3f);
  std::fill(k.begin() + row, k.begin() + row + 32, 0.0f);  // a zero block
  for (DType t : kBlockTypes) {
    CAPTURE(name(t));
    const std::vector<std::byte> k0 = rng.bytes(bytes_for(t, num_slots * row)), v0 = rng.bytes(k0.size());
    std::vector<std::byte> want_k = k0, want_v = v0;
    ref::kv_append({k.data(), v.data(), slots.data(), n_tokens, want_k.data(), want_v.data(), t, num_slots, p});
    CHECK(want_k != k0);
    for_each_isa([&](cpu::Isa) {
      std::vector<std::byte> got_k = k0, got_v = v0;
      cpu::kv_append({k.data(), v.data(), slots.data(), n_tokens, got_k.data(), got_v.data(), t, num_slots, p}, pool());
      CHECK(got_k == want_k);
      CHECK(got_v == want_v);
    });
  }
}

// A scenario's pools quantized to t, and the same pools dequantized to f32.
struct QuantPools {
  std::vector<std::byte> k, v;
  std::vector<float> k_f32, v_f32;
};
QuantPools quantize_pools(const Scenario& sc, DType t) {
  const int64_t n = (int64_t)sc.k_pool.size();
  QuantPools r{std::vector<std::byte>(bytes_for(t, n)), std::vector<std::byte>(bytes_for(t, n)), {}, {}};
  kernels::store_kv_row(r.k.data(), t, 0, sc.k_pool.data(), n);
  kernels::store_kv_row(r.v.data(), t, 0, sc.v_pool.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    r.k_f32.push_back(kernels::load_kv(r.k.data(), t, i));
    r.v_f32.push_back(kernels::load_kv(r.v.data(), t, i));
  }
  return r;
}

// Odd contexts (not multiples of the block size), GQA groups, decodes split
// over threads and prefill chunks (q_len > 1), a window, head_dim 32 (less
// than one AVX-512 pass), 64, 96 and 128.
std::vector<Scenario> quant_scenarios(Rng& rng) {
  auto gqa = [](int head_dim, int block_size, int heads, int kv_heads) {
    AttentionParams p;
    p.n_heads = heads;
    p.n_kv_heads = kv_heads;
    p.head_dim = head_dim;
    p.block_size = block_size;
    p.causal = true;
    return p;
  };
  AttentionParams win = gqa(96, 8, 6, 2);
  win.window = 33;
  std::vector<Scenario> s;
  s.emplace_back(gqa(64, 16, 8, 2), std::vector<Seq>{{700, 1}, {40, 3}, {451, 1}, {90, 17}}, rng);
  s.emplace_back(gqa(128, 16, 8, 2), std::vector<Seq>{{1000, 1}, {77, 9}}, rng);
  s.emplace_back(gqa(32, 8, 4, 1), std::vector<Seq>{{129, 1}, {33, 33}}, rng);
  s.emplace_back(win, std::vector<Seq>{{90, 17}, {451, 1}, {5, 1}}, rng);
  return s;
}

// Every element of a block reads back exactly in f32 and each ISA widens it
// exactly, so the bits are those of f32 pools of the dequantized values, and
// the error against the f64 reference over the same blocks is f32's: 1e-5.
TEST_CASE("paged attention over q8_0 and fp8_e4m3 pools matches the reference over the same pools on every ISA, bit for bit with f32 pools of the dequantized values") {
  Rng rng(904);
  for (DType t : kBlockTypes) {
    CAPTURE(name(t));
    for (const Scenario& sc : quant_scenarios(rng)) {
      CAPTURE(sc.p.head_dim);
      const QuantPools r = quantize_pools(sc, t);
      check_pools_as_f32(sc, t, r);
    }
  }
}

// What quantizing costs: attention over the 8-bit pools against the f64
// reference over the unquantized values (uniform K in [-2, 2), V in [-1, 1)).
// q8_0 keeps 7 bits of each block's amax, E4M3 3 mantissa bits; the bounds
// are about 1.7 times the worst measured here over nine seeds (q8_0
// 4.9e-3 to 6.0e-3, fp8 3.3e-2 to 4.1e-2).
TEST_CASE("paged attention over q8_0 and fp8_e4m3 pools stays within 1e-2 and 7e-2 of the unquantized reference") {
  Rng rng(905);
  for (DType t : kBlockTypes) {
    CAPTURE(name(t));
    const double bound = t == DType::q8_0 ? 1e-2 : 7e-2;
    for (const Scenario& sc : quant_scenarios(rng)) {
      CAPTURE(sc.p.head_dim);
      const QuantPools r = quantize_pools(sc, t);
      const size_t out_size = (size_t)(sc.n_tokens * sc.p.n_heads * sc.p.head_dim);
      std::vector<float> want(out_size), got(out_size, -777.0f);
      ref::paged_attention(sc.args(want.data(), nullptr));
      AlignedBuffer ws(cpu::attention_workspace_bytes(sc.p, {sc.n_tokens, (int64_t)sc.seqs.size(), max_context(sc), pool().num_threads()}));
      AttentionArgs a = sc.args(got.data(), ws.data());
      a.k_pool = r.k.data();
      a.v_pool = r.v.data();
      a.kv_dtype = t;
      cpu::paged_attention(a, pool());
      const double err = rel_error(got, want);
      MESSAGE(name(t) << " head_dim " << sc.p.head_dim << ": relative error to unquantized " << err);
      CHECK(err <= bound);
    }
  }
}

}  // namespace
}  // namespace tessera::testing
