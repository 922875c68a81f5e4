// Every op on every available device (the CPU backend and any plugin beside
// the tessera binary), as a one-dispatch Plan through the HAL, against
// kernels/reference on fresh random inputs. A device that does not support a
// case says why (its kernel table's reason) and the case is reported, not
// silently passed.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>

#include "conformance.h"
#include "hal_harness.h"
#include "kernels/kv_element.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

OpInput weight_f32(Shape s, const std::vector<float>& v) {
  return {OpInput::weight, TensorDesc::contiguous(DType::f32, s), as_bytes(v), StepField::none};
}
OpInput step(StepField f) { return {OpInput::step, {}, {}, f}; }

// A plain one-sequence step of n tokens (no KV use).

// Runs the case on every device; `check` compares one device's output (given the device too where it takes two arguments).
template <class Check>
void on_every_device(const OpCase& c, OpKind op, DType wdt, Check check) {
  auto& devices = devices_under_test();
  REQUIRE(!devices.empty());
  for (auto& d : devices) {
    CAPTURE(d.label);
    const std::string why = unsupported_reason(*d.device, c, wdt);
    CHECK(c.op == op);
    if (!why.empty()) {
      MESSAGE(d.label << " does not run " << name(op) << " with " << name(wdt) << ": " << why);
      continue;
    }
    auto out = run_op(*d.device, c);
    REQUIRE_MESSAGE(out.has_value(), out.status().message());
    if constexpr (std::is_invocable_v<Check, const DeviceUnderTest&, decltype(*out)>) check(d, *out);
    else check(*out);
  }
}

// Every weight dtype: plain, and each GGUF block type (32-element blocks,
// then 256-element super-blocks).
const DType kWeightTypes[] = {DType::f32,  DType::f16,  DType::bf16, DType::q8_0, DType::q4_0,   DType::q4_1,
                              DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q2_K, DType::q3_K, DType::q4_K,
                              DType::q5_K, DType::q6_K, DType::iq4_xs};

// A device's matmul against the reference (x in f32, f64 sums). With
// block-quantized weights a device may first round x to ggml's q8 grid
// (conformance.h ggml_q8_grid), as llama.cpp's CPU backend does: every
// device is held to that rounding's per-output worst case (a relative norm
// is fragile for one x row with per-block mins), and then, where its backend
// states how it rounds x (x_rounding below), to the reference on x rounded
// that way by the test's own oracle, within 1e-5: that pins the block size,
// the scale and its f16 rounding, and the round-to-even.
// Plain weights: within 1e-5 of the reference on every device (the CUDA
// and ROCm GEMMs on the matrix units, m > 8 with f16 and bf16 weights, split
// x into two 16-bit parts to get there: kernels/cuda/matmul_gemm_mma.cu),
// but for the CPU's bf16 dot panels, which round x to bf16 as ggml does and
// are held to that rounding's worst case (check_plain_output, conformance.h).

// How a backend rounds x for a matmul with `wdt` weights; nullopt: not stated.
std::optional<Q8Grid> x_rounding(const std::string& label, DType wdt) {
  const std::string backend = label.substr(0, label.find(':'));
  if (backend == "cpu") {
    // kernels/cpu/matmul.cpp: the 32-element block types to 32-element
    // blocks with d kept in f32; q2_K..q6_K and iq4_xs to q8_K.
    if (x_quant_block(wdt) == 0) return Q8Grid{};
    return Q8Grid{x_quant_block(wdt), false};
  }
  if (backend == "vulkan") return ggml_q8_grid(wdt);  // kernels/vulkan/q8_round_rows.comp, every block type
  return std::nullopt;
}

}  // namespace

TEST_CASE("matmul matches the reference on every device for every weight dtype, odd shapes included") {
  Rng rng(101);
  struct Shape3 { int64_t m, n, k; };
  for (DType wdt : kWeightTypes) {
    // One block per unit of k (plain types: 32, so that k has a partial last 32 too where odd).
    const int64_t kb = traits(wdt).quantized ? traits(wdt).block_elems : 32;
    const int64_t k_odd = traits(wdt).quantized ? 5 * kb : 5 * kb + 7;
    // m = 1 and up to 4 (gemv), more (gemm); odd n; k of 1, 2, 3 and 5 blocks. Each
    // (dtype, m) is a pipeline the driver compiles (lavapipe: seconds), so
    // the added shapes reuse the m of gemv's and gemm's existing tiles.
    for (Shape3 s : {Shape3{1, 33, 2 * kb}, Shape3{3, 17, 3 * kb}, Shape3{7, 65, kb}, Shape3{17, 8, 2 * kb},
                     Shape3{2, 9, k_odd}, Shape3{5, 19, 3 * kb}}) {
      CAPTURE(name(wdt));
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      auto x = rng.floats((size_t)(s.m * s.k));
      const Q8Grid grid = ggml_q8_grid(wdt);
      if (grid.block) keep_off_q8_ties(x, grid);
      const auto w = random_weights(wdt, s.n, s.k, rng);
      std::vector<float> expect((size_t)(s.m * s.n));
      MatmulArgs a;
      a.x = x.data();
      a.w = w.data();
      a.w_dtype = wdt;
      a.y = expect.data();
      a.m = s.m;
      a.n = s.n;
      a.k = s.k;
      ref::matmul(a);
      OpCase c{OpKind::matmul, NoParams{}, {weight_f32(Shape{s.m, s.k}, x), {OpInput::weight, TensorDesc::contiguous(wdt, Shape{s.n, s.k}), w, StepField::none}}};
      plain_step(c, 1);
      const std::vector<float> worst = grid.block ? q8_error_bound(wdt, x, w, s.m, s.n, s.k, grid) : std::vector<float>{};
      on_every_device(c, OpKind::matmul, wdt, [&](const DeviceUnderTest& d, const auto& out) {
        const std::vector<float> y = from_bytes<float>(out[0]);
        if (!grid.block) {
          check_plain_output(d.label, wdt, x, w, {s.m, s.n, s.k}, y, expect);
          return;
        }
        CHECK(beyond_bound(y, expect, worst) == 0);
        const std::optional<Q8Grid> rounding = x_rounding(d.label, wdt);
        if (!rounding) {
          MESSAGE(d.label << " does not state how it rounds x for " << name(wdt) << " weights; held to the worst case only");
          return;
        }
        std::vector<float> rounded_expect = expect;
        if (rounding->block) {
          const std::vector<float> xr = round_to_q8_grid(x, *rounding);
          MatmulArgs ar = a;
          ar.x = xr.data();
          ar.y = rounded_expect.data();
          ref::matmul(ar);
        }
        INFO("x rounded to blocks of " << rounding->block << (rounding->f16_scale ? ", d in f16" : ", d in f32"));
        CHECK(rel_error(y, rounded_expect) <= 1e-5);
      });
    }
  }
}

TEST_CASE("embedding gathers rows of every table dtype on every device, every GGUF block type included") {
  Rng rng(102);
  for (DType t : kWeightTypes) {
    CAPTURE(name(t));
    // Plain rows of odd length; quantized ones of 3 blocks (2 super-blocks).
    const int64_t dim = !traits(t).quantized ? 67 : traits(t).block_elems == 256 ? 512 : 96;
    const int64_t vocab = 37, n = 5;
    const auto table = random_weights(t, vocab, dim, rng);
    OpCase c{OpKind::embedding, NoParams{}, {{OpInput::weight, TensorDesc::contiguous(t, Shape{vocab, dim}), table, StepField::none}, step(StepField::token_ids)}};
    plain_step(c, (int32_t)n);
    for (auto& id : c.token_ids) id = rng.integer(0, (int32_t)vocab - 1);
    std::vector<float> expect((size_t)(n * dim));
    ref::embedding({table.data(), t, vocab, dim, c.token_ids.data(), n, expect.data()});
    on_every_device(c, OpKind::embedding, t, [&](const auto& out) { CHECK(rel_error(from_bytes<float>(out[0]), expect) <= 1e-6); });
  }
}

TEST_CASE("rms_norm, silu_mul, add, softmax and argmax match the reference on every device at odd sizes") {
  Rng rng(103);
  const int64_t rows = 5, cols = 63;
  const auto x = rng.floats((size_t)(rows * cols), -3, 3), y = rng.floats((size_t)(rows * cols), -3, 3), w = rng.floats((size_t)cols);
  {
    std::vector<float> expect(x.size());
    ref::rms_norm({x.data(), w.data(), expect.data(), rows, cols, {1e-5f}});
    OpCase c{OpKind::rms_norm, RmsNormParams{1e-5f}, {weight_f32(Shape{rows, cols}, x), weight_f32(Shape{cols}, w)}};
    plain_step(c, 1);
    on_every_device(c, OpKind::rms_norm, DType::f32, [&](const auto& out) { CHECK(rel_error(from_bytes<float>(out[0]), expect) <= 1e-5); });
  }
  for (OpKind op : {OpKind::silu_mul, OpKind::add}) {
    CAPTURE(name(op));
    std::vector<float> expect(x.size());
    if (op == OpKind::add) ref::add({x.data(), y.data(), expect.data(), rows * cols});
    else ref::silu_mul({x.data(), y.data(), expect.data(), rows * cols});
    OpCase c{op, NoParams{}, {weight_f32(Shape{rows, cols}, x), weight_f32(Shape{rows, cols}, y)}};
    plain_step(c, 1);
    on_every_device(c, op, DType::f32, [&](const auto& out) { CHECK(rel_error(from_bytes<float>(out[0]), expect) <= 1e-5); });
  }
  {
    std::vector<float> expect = x;
    ref::softmax({expect.data(), rows, cols});
    OpCase c{OpKind::softmax, NoParams{}, {weight_f32(Shape{rows, cols}, x)}};
    plain_step(c, 1);
    on_every_device(c, OpKind::softmax, DType::f32, [&](const auto& out) { CHECK(rel_error(from_bytes<float>(out[0]), expect) <= 1e-5); });
  }
  {
    std::vector<int32_t> expect((size_t)rows);
    ref::argmax({x.data(), expect.data(), rows, cols});
    OpCase c{OpKind::argmax, NoParams{}, {weight_f32(Shape{rows, cols}, x)}};
    plain_step(c, 1);
    on_every_device(c, OpKind::argmax, DType::f32, [&](const auto& out) { CHECK(from_bytes<int32_t>(out[0]) == expect); });
  }
}

TEST_CASE("rope rotates both layouts, partial rotary included, on every device") {
  Rng rng(104);
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half_split}) {
    for (int32_t rot : {16, 10}) {
      CAPTURE(rot);
      const int32_t heads = 3, hd = 16, n = 4;
      RopeParams p{heads, hd, rot, 10000.0f, layout};
      const auto x = rng.floats((size_t)(n * heads * hd));
      OpCase c{OpKind::rope, p, {weight_f32(Shape{n, heads * hd}, x), step(StepField::positions)}};
      plain_step(c, n);
      for (auto& pos : c.positions) pos = rng.integer(0, 500);
      std::vector<float> expect = x;
      ref::rope({expect.data(), c.positions.data(), n, p});
      on_every_device(c, OpKind::rope, DType::f32, [&](const auto& out) { CHECK(max_abs_diff(from_bytes<float>(out[0]), expect) <= 1e-5); });
    }
  }
}

// A kv_append case: n tokens of K/V rows into pools of `slots` rows of type
// t holding kp0/vp0, each token to a shuffled distinct slot except token
// `pad`, which has slot -1 (a padding token, core/hal/step_padding.h) and
// must write nothing. Checks every device's pools against the reference's, byte for byte.
// `same` compares a device's pool with the reference's (default: byte for byte).
using PoolCheck = std::function<void(const std::vector<std::byte>& got, const std::vector<std::byte>& want)>;
static void check_kv_append(Rng& rng, KvCacheParams kvp, int64_t slots, int64_t n, const std::vector<float>& k,
                     const std::vector<float>& v, const std::vector<float>& kp0, const std::vector<float>& vp0, DType t,
                     int64_t pad, const PoolCheck& same = {}) {
  const int64_t width = (int64_t)kvp.n_kv_heads * kvp.head_dim;
  const TensorDesc pool = TensorDesc::contiguous(t, Shape{slots, width});
  OpCase c{OpKind::kv_append, kvp,
           {weight_f32(Shape{n, width}, k), weight_f32(Shape{n, width}, v), step(StepField::slot_mapping),
            {OpInput::pool, pool, kv_pool_bytes(kp0, t), StepField::none},
            {OpInput::pool, pool, kv_pool_bytes(vp0, t), StepField::none}}};
  plain_step(c, n);
  // A plan that writes the KV cache checks the step's sequence metadata too.
  c.bucket.max_blocks_per_seq = 2;
  c.block_tables = {0, 1};
  std::vector<int32_t> all((size_t)slots);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng.engine());
  c.slot_mapping.assign(all.begin(), all.begin() + n);
  c.slot_mapping[(size_t)pad] = kNoSlot;
  std::vector<std::byte> ek = c.inputs[3].bytes, ev = c.inputs[4].bytes;
  ref::kv_append({k.data(), v.data(), c.slot_mapping.data(), n, ek.data(), ev.data(), t, slots, kvp});
  on_every_device(c, OpKind::kv_append, DType::f32, [&](const auto& out) {
    REQUIRE(out.size() == 2);
    if (same) {
      same(out[0], ek);
      same(out[1], ev);
    } else {
      CHECK(out[0] == ek);
      CHECK(out[1] == ev);
    }
  });
}

TEST_CASE("kv_append writes every token's K and V to its slot, and nothing for a token of slot -1, on every device") {
  Rng rng(105);
  const int32_t kv_heads = 2, hd = 8, bs = 4, blocks = 6, n = 5;
  const int64_t width = kv_heads * hd, slots = (int64_t)bs * blocks;
  const auto k = rng.floats((size_t)(n * width)), v = rng.floats((size_t)(n * width));
  const auto kp = rng.floats((size_t)(slots * width)), vp = rng.floats((size_t)(slots * width));
  check_kv_append(rng, {kv_heads, hd, bs}, slots, n, k, v, kp, vp, DType::f32, /*pad=*/2);
}

TEST_CASE("kv_append rounds K and V to f16 and bf16 pools as the reference does, bit for bit, on every device") {
  Rng rng(112);
  // Rows of 2 KV heads of 9 and of 3 of 7 (an odd width), a block size of 5;
  // a padding token writes nothing.
  for (auto [kv_heads, hd] : {std::pair{2, 9}, std::pair{3, 7}})
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(name(t));
    CAPTURE(kv_heads * hd);
    const int32_t bs = 5, blocks = 4, n = 6;
    const int64_t width = kv_heads * hd, slots = (int64_t)bs * blocks;
    auto k = rng.floats((size_t)(n * width), -70000.0f, 70000.0f), v = rng.floats((size_t)(n * width));
    // Values that round differently in each type: ties, subnormals, overflow, signed zero, infinity, NaN.
    const float edge[] = {1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f, 1e-6f, -3e-8f, 65520.0f, -0.0f, INFINITY, NAN, 1.00390625f};
    for (size_t i = 0; i < std::size(edge); ++i) k[i * 2] = edge[i];
    const auto kp0 = rng.floats((size_t)(slots * width)), vp0 = rng.floats((size_t)(slots * width));
    check_kv_append(rng, {kv_heads, hd, bs}, slots, n, k, v, kp0, vp0, t, /*pad=*/3);
  }
}

// The 8-bit pools, read back as f32: every element within one step of the
// reference's (q8_0: the block's scale d; fp8_e4m3: an eighth of the value,
// E4M3's spacing, or a subnormal step d * 2^-9), and every scale within one
// f16 rounding. A device whose division rounds otherwise than the host's
// (GLSL's x / y may be 2.5 ulp) can move an element across a rounding tie;
// the CPU stores the reference's bytes exactly (kv_quant_test.cpp).
void check_block_pool(const std::vector<std::byte>& got, const std::vector<std::byte>& want, DType t) {
  REQUIRE(got.size() == want.size());
  const int64_t n = (int64_t)(want.size() / 34 * 32);
  int64_t off_step = 0, exact = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t dw;
    std::memcpy(&dw, want.data() + i / 32 * 34, 2);
    const double d = f16_to_f32(dw);
    const double g = kernels::load_kv(got.data(), t, i), w = kernels::load_kv(want.data(), t, i);
    const double step = t == DType::q8_0 ? d : std::fmax(std::fabs(w) / 8.0, d * 0x1p-9);
    off_step += !(std::fabs(g - w) <= step * 1.001);
    exact += g == w;
  }
  CHECK_MESSAGE(off_step == 0, off_step << " of " << n << " elements more than one step from the reference's");
  MESSAGE(name(t) << ": " << exact << " of " << n << " elements equal the reference's");
}

TEST_CASE("kv_append quantizes K and V into q8_0 and fp8_e4m3 pools within one step of the reference, on every device") {
  Rng rng(114);
  // Rows of 2 KV heads of 32 and 1 of 64 and 3 of 32 (an odd number of 34-byte blocks a row).
  for (auto [kv_heads, hd] : {std::pair{2, 32}, std::pair{1, 64}, std::pair{3, 32}})
    for (DType t : {DType::q8_0, DType::fp8_e4m3}) {
      CAPTURE(name(t));
      CAPTURE(kv_heads * hd);
      const int32_t bs = 5, blocks = 4, n = 6;
      const int64_t width = kv_heads * hd, slots = (int64_t)bs * blocks;
      auto k = rng.floats((size_t)(n * width), -30.0f, 30.0f), v = rng.floats((size_t)(n * width), -1e-3f, 1e-3f);
      std::fill(k.begin(), k.begin() + 32, 0.0f);  // a zero block: scale 0
      const auto kp0 = rng.floats((size_t)(slots * width)), vp0 = rng.floats((size_t)(slots * width));
      check_kv_append(rng, {kv_heads, hd, bs}, slots, n, k, v, kp0, vp0, t, /*pad=*/3,
                      [t](const std::vector<std::byte>& got, const std::vector<std::byte>& want) { check_block_pool(got, want, t); });
    }
}

struct AttentionSeq {
  int32_t context, queries;  // the queries are the context's last positions
};
struct AttentionScenario {
  std::string what;
  std::vector<AttentionSeq> seqs;
  AttentionParams p;
  int32_t max_blocks;           // block table row length
  int32_t spare_tokens = 0;     // bucket room beyond this step's tokens
  int32_t spare_seqs = 0;       // and sequences
  DType kv = DType::f32;        // the pools' type
  // The NaN case: the pools hold the values of `values_of` (an f32 pool its
  // decoded values), the first sequence's first K element is NaN (fp8's NaN
  // code), and each device's output goes into `outputs` by device label
  // instead of being checked against the reference (which propagates the NaN).
  bool k_nan = false;
  DType values_of = DType::f32;
  std::map<std::string, std::vector<float>>* outputs = nullptr;
};

// Runs one paged attention step, K/V in shuffled blocks of a pool with
// blocks to spare, on every device, against the reference.
void check_attention(const AttentionScenario& sc, Rng& rng) {
  CAPTURE(sc.what);
  const AttentionParams& p = sc.p;
  int32_t used_blocks = 0;
  for (const AttentionSeq& s : sc.seqs) used_blocks += (s.context + p.block_size - 1) / p.block_size;
  const int32_t num_blocks = used_blocks + 4;
  const int64_t width = (int64_t)p.n_kv_heads * p.head_dim, slots = (int64_t)num_blocks * p.block_size;
  const int64_t q_width = (int64_t)p.n_heads * p.head_dim;
  OpCase c{OpKind::paged_attention, p, {}};
  std::vector<int32_t> free_blocks((size_t)num_blocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng.engine());
  int32_t n = 0;
  c.query_start = {0};
  for (const AttentionSeq& s : sc.seqs) {
    const int32_t used = (s.context + p.block_size - 1) / p.block_size;
    REQUIRE(used <= sc.max_blocks);
    for (int32_t j = 0; j < sc.max_blocks; ++j) {
      c.block_tables.push_back(j < used ? free_blocks.back() : 0);
      if (j < used) free_blocks.pop_back();
    }
    for (int32_t q = 0; q < s.queries; ++q) c.positions.push_back(s.context - s.queries + q);
    n += s.queries;
    c.query_start.push_back(n);
    c.seq_lens.push_back(s.context);
  }
  c.n_tokens = n;
  c.bucket = {n + sc.spare_tokens, (int32_t)sc.seqs.size() + sc.spare_seqs, n + sc.spare_tokens, sc.max_blocks};
  c.token_ids.assign((size_t)n, 0);
  c.slot_mapping.assign((size_t)n, 0);
  const auto q = rng.floats((size_t)(n * q_width));
  const auto kp = rng.floats((size_t)(slots * width)), vp = rng.floats((size_t)(slots * width));
  const TensorDesc pool = TensorDesc::contiguous(sc.kv, Shape{slots, width});
  std::vector<std::byte> kb, vb;
  if (sc.k_nan) {
    // Both pools through values_of first; then slot 0 of the first
    // sequence's first block, KV head 0, element 0, is NaN.
    kb = kv_pool_bytes(kp, sc.values_of);
    vb = kv_pool_bytes(vp, sc.values_of);
    const int64_t e = (int64_t)c.block_tables[0] * p.block_size * width;
    if (sc.values_of == DType::fp8_e4m3) kb[(size_t)(e / 32 * 34 + 2 + e % 32)] = std::byte{0x7F};
    else REQUIRE_MESSAGE(sc.values_of == DType::f32, "k_nan: fp8_e4m3 or f32 values");
    if (sc.kv != sc.values_of) {
      REQUIRE(sc.kv == DType::f32);
      std::vector<float> k32((size_t)(slots * width)), v32(k32.size());
      for (size_t i = 0; i < k32.size(); ++i) {
        k32[i] = kernels::load_kv(kb.data(), sc.values_of, (int64_t)i);
        v32[i] = kernels::load_kv(vb.data(), sc.values_of, (int64_t)i);
      }
      kb = as_bytes(k32);
      vb = as_bytes(v32);
    }
    if (sc.kv == DType::f32) reinterpret_cast<float*>(kb.data())[e] = NAN;
  } else {
    kb = kv_pool_bytes(kp, sc.kv);
    vb = kv_pool_bytes(vp, sc.kv);
  }
  c.inputs = {weight_f32(Shape{n, q_width}, q), {OpInput::pool, pool, kb, StepField::none},
              {OpInput::pool, pool, vb, StepField::none}, step(StepField::positions), step(StepField::query_start),
              step(StepField::seq_lens), step(StepField::block_tables)};
  std::vector<float> expect((size_t)(n * q_width));
  AttentionArgs a;
  a.q = q.data();
  a.out = expect.data();
  a.n_tokens = n;
  a.k_pool = kb.data();
  a.v_pool = vb.data();
  a.kv_dtype = sc.kv;
  a.positions = c.positions.data();
  a.query_start = c.query_start.data();
  a.seq_lens = c.seq_lens.data();
  a.block_tables = c.block_tables.data();
  a.n_seqs = (int32_t)sc.seqs.size();
  a.max_blocks_per_seq = sc.max_blocks;
  a.p = p;
  ref::paged_attention(a);
  // f32 scores, softmax and weighted sum against the f64 reference, which
  // reads the same rounded K/V: the bound is f32's whatever the pools' type.
  CAPTURE(name(sc.kv));
  on_every_device(c, OpKind::paged_attention, DType::f32, [&](const DeviceUnderTest& d, const auto& out) {
    if (sc.outputs) {
      (*sc.outputs)[d.label] = from_bytes<float>(out[0]);
      return;
    }
    const double err = rel_error(from_bytes<float>(out[0]), expect);
    CHECK_MESSAGE(err <= 1e-5, "relative error " << err);
  });
}

TEST_CASE("paged attention matches the reference across shuffled blocks, grouped-query, decode and prefill, on every device") {
  Rng rng(106);
  const AttentionParams p{8, 2, 16, 16, 0.0f, true};
  for (const AttentionScenario& sc : {AttentionScenario{"decode, two sequences spanning 3 and 5 blocks", {{37, 1}, {70, 1}}, p, 6},
                                      AttentionScenario{"prefill of 7 tokens after 20 cached, causal", {{27, 7}}, p, 6},
                                      AttentionScenario{"mixed: a prefill and a decode in one step", {{9, 9}, {33, 1}}, p, 6}})
    check_attention(sc, rng);
}

// Each sequence takes its own path: one query token, the split-context
// decode; several, the tiled prefill (docs/backends.md). The bucket has room
// to spare, so kernels sized for it must skip what this step lacks.
TEST_CASE("paged attention of a mixed step (long decodes beside prefill chunks) matches the reference on every device") {
  Rng rng(108);
  const std::vector<AttentionSeq> mixed = {{700, 1}, {40, 3}, {451, 1}, {90, 17}, {19, 1}, {120, 33}, {300, 1}};
  const AttentionParams gqa{8, 2, 32, 16, 0.0f, true};
  check_attention({"mixed: decodes of 700, 451, 19 and 300 positions, chunks of 3, 17, 33 at nonzero positions", mixed, gqa, 48, 9, 3},
                  rng);
  check_attention({"mixed, head_dim 63, blocks of 8, bucket exactly the step", mixed, AttentionParams{6, 3, 63, 8, 0.0f, true}, 90},
                  rng);
  check_attention({"decode only, in a bucket that could hold prefill", {{900, 1}, {5, 1}, {333, 1}}, gqa, 60, 12, 2}, rng);
  check_attention({"one decode token in a bucket of one", {{1000, 1}}, AttentionParams{4, 1, 64, 16, 0.0f, true}, 64}, rng);
  check_attention({"prefill chunks only", {{64, 33}, {17, 17}, {50, 3}}, gqa, 8, 4, 1}, rng);
  // Beyond the prefill kernel's head_dim the split path serves every token.
  check_attention({"mixed, head_dim 160", {{300, 1}, {45, 17}, {2, 2}}, AttentionParams{4, 2, 160, 16, 0.0f, true}, 20, 3, 1},
                  rng);
}

// f16 and bf16 pools hold the rounded K/V; 8-bit ones the same blocks on
// every device (the reference's bytes). Each reads its elements back
// exactly in f32, so the bound is f32's. The 8-bit types need head_dim a
// multiple of 32, so their odd scenario takes 64 where the 16-bit ones take 63.
TEST_CASE("paged attention over f16, bf16, q8_0 and fp8_e4m3 pools matches the reference over the same pools on every device") {
  Rng rng(113);
  for (DType t : {DType::f16, DType::bf16, DType::q8_0, DType::fp8_e4m3}) {
    const bool blocks = t == DType::q8_0 || t == DType::fp8_e4m3;
    const AttentionParams gqa{8, 2, 32, 16, 0.0f, true};
    AttentionParams windowed{6, 3, blocks ? 64 : 63, 8, 0.0f, true};
    windowed.window = 40;
    AttentionScenario mixed{"mixed decodes and chunks, grouped-query", {{700, 1}, {40, 3}, {451, 1}, {90, 17}, {19, 1}}, gqa, 48, 9, 3};
    AttentionScenario odd{"3 KV heads, blocks of 8, window 40", {{300, 1}, {45, 17}, {2, 2}}, windowed, 40};
    AttentionScenario decode{"one long decode (the split path)", {{1000, 1}}, AttentionParams{4, 1, blocks ? 128 : 64, 16, 0.0f, true}, 64};
    for (AttentionScenario* sc : {&mixed, &odd, &decode}) {
      sc->kv = t;
      check_attention(*sc, rng);
    }
  }
}

// The code fp8_e4m3 stores for a NaN (0x7F) reads back as NaN on every
// device and ISA, as the reference reads it: attention over an fp8 pool
// holding it gives what the same device gives over an f32 pool of the fp8
// pool's values with a NaN there (it read as 480 times the block's scale
// before on AVX2, AVX-512, NEON and Vulkan). What a NaN score then does is
// each device's own (the kernels' exp takes it as -inf); the reference
// propagates it, so the reference is not the oracle here.
TEST_CASE("paged attention reads fp8_e4m3's NaN code as an f32 pool's NaN, on every device and ISA") {
  for_each_isa([&](cpu::Isa) {
    std::map<std::string, std::vector<float>> fp8, f32;
    for (auto* out : {&fp8, &f32}) {
      Rng rng(117);  // the same q, K and V for both
      AttentionScenario sc{"a NaN in the first sequence's K", {{40, 3}, {90, 1}, {19, 1}}, AttentionParams{8, 2, 32, 16, 0.0f, true}, 8};
      sc.k_nan = true;
      sc.values_of = DType::fp8_e4m3;
      sc.kv = out == &fp8 ? DType::fp8_e4m3 : DType::f32;
      sc.outputs = out;
      check_attention(sc, rng);
    }
    REQUIRE(fp8.size() == f32.size());
    for (const auto& [label, y] : fp8) {
      CAPTURE(label);
      REQUIRE(f32.count(label));
      const std::vector<float>& y32 = f32.at(label);
      REQUIRE(y.size() == y32.size());
      size_t differ = 0;
      for (size_t i = 0; i < y.size(); ++i) differ += !(y[i] == y32[i] || (std::isnan(y[i]) && std::isnan(y32[i])));
      CHECK_MESSAGE(differ == 0, differ << " of " << y.size() << " outputs differ between the fp8 pool and its f32 twin");
    }
  });
}

TEST_CASE("gather_rows picks the asked rows on every device") {
  Rng rng(107);
  const int64_t n = 6, width = 19;
  const auto x = rng.floats((size_t)(n * width));
  OpCase c{OpKind::gather_rows, NoParams{}, {weight_f32(Shape{n, width}, x), step(StepField::logit_rows)}};
  plain_step(c, (int32_t)n);
  c.logit_rows = {5, 0, 3};
  c.bucket.max_logit_rows = 3;
  std::vector<float> expect;
  for (int32_t r : c.logit_rows) expect.insert(expect.end(), x.begin() + r * width, x.begin() + (r + 1) * width);
  on_every_device(c, OpKind::gather_rows, DType::f32, [&](const auto& out) { CHECK(from_bytes<float>(out[0]) == expect); });
}

TEST_CASE("rope with freq_scale and llama3 frequency factors on every device (or the device says why not)") {
  Rng rng(109);
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half_split}) {
    const int32_t heads = 3, hd = 16, rot = 12, n = 5;
    RopeParams p{heads, hd, rot, 500000.0f, layout};
    p.freq_scale = 0.125f;
    const auto x = rng.floats((size_t)(n * heads * hd));
    const auto factors = rng.floats((size_t)rot / 2, 1.0f, 8.0f);
    for (bool with_factors : {false, true}) {
      CAPTURE(with_factors);
      OpCase c{OpKind::rope, p, {weight_f32(Shape{n, heads * hd}, x), step(StepField::positions)}};
      if (with_factors) c.inputs.push_back(weight_f32(Shape{rot / 2}, factors));
      plain_step(c, n);
      for (auto& pos : c.positions) pos = rng.integer(0, 5000);
      std::vector<float> expect = x;
      ref::rope({expect.data(), c.positions.data(), n, p, nullptr, 0, with_factors ? factors.data() : nullptr});
      on_every_device(c, OpKind::rope, DType::f32, [&](const auto& out) { CHECK(max_abs_diff(from_bytes<float>(out[0]), expect) <= 1e-5); });
    }
  }
}

TEST_CASE("paged attention with a sliding window and soft-capped scores on every device (or the device says why not)") {
  Rng rng(110);
  AttentionParams p{8, 2, 32, 16, 0.0f, true};
  p.window = 40;
  check_attention({"window 40: decodes and chunks crossing blocks", {{700, 1}, {40, 3}, {90, 17}, {19, 1}}, p, 48, 2, 1}, rng);
  p.softcap = 3.0f;
  p.scale = 0.5f;
  check_attention({"window 40 and soft-cap 3", {{300, 1}, {64, 33}}, p, 20}, rng);
  p.window = 0;
  check_attention({"soft-cap 3 alone", {{300, 1}, {64, 33}}, p, 20}, rng);
}

TEST_CASE("head_rms_norm, scale, softcap and gelu_mul on every device (or the device says why not)") {
  Rng rng(111);
  const int64_t rows = 3, heads = 5, hd = 24;
  const auto x = rng.floats((size_t)(rows * heads * hd), -40, 40), w = rng.floats((size_t)hd);
  {
    std::vector<float> expect(x.size());
    ref::head_rms_norm({x.data(), w.data(), expect.data(), rows, heads, hd, RmsNormParams{1e-6f}});
    OpCase c{OpKind::head_rms_norm, RmsNormParams{1e-6f}, {weight_f32(Shape{rows, heads * hd}, x), weight_f32(Shape{hd}, w)}};
    plain_step(c, 1);
    on_every_device(c, OpKind::head_rms_norm, DType::f32, [&](const auto& out) { CHECK(rel_error(from_bytes<float>(out[0]), expect) <= 1e-6); });
  }
  for (OpKind op : {OpKind::scale, OpKind::softcap}) {
    CAPTURE(name(op));
    std::vector<float> expect(x.size());
    const float s = 11.3137f;
    OpParams params = ScaleParams{s};
    if (op == OpKind::scale) {
      ref::scale({x.data(), expect.data(), (int64_t)x.size(), s});
    } else {
      ref::softcap({x.data(), expect.data(), (int64_t)x.size(), s});
      params = SoftcapParams{s};
    }
    OpCase c{op, params, {weight_f32(Shape{rows, heads * hd}, x)}};
    plain_step(c, 1);
    on_every_device(c, op, DType::f32, [&](const auto& out) { CHECK(max_abs_diff(from_bytes<float>(out[0]), expect) <= 4e-7 * s * 40); });
  }
  {
    const auto gate = rng.floats(x.size(), -12, 12), up = rng.floats(x.size(), -2, 2);
    std::vector<float> expect(x.size());
    ref::gelu_mul({gate.data(), up.data(), expect.data(), (int64_t)x.size()});
    OpCase c{OpKind::gelu_mul, NoParams{}, {weight_f32(Shape{rows, heads * hd}, gate), weight_f32(Shape{rows, heads * hd}, up)}};
    plain_step(c, 1);
    // One f16 step of the GELU (|gelu| < 12) times |up| <= 2 at most.
    on_every_device(c, OpKind::gelu_mul, DType::f32, [&](const auto& out) { CHECK(max_abs_diff(from_bytes<float>(out[0]), expect) <= 12.0 / 1024 * 2); });
  }
}

namespace {

// A matmul's output against kernels/reference as the matmul test above holds it.
void check_matmul_output(const std::string& label, DType wdt, const std::vector<float>& x, const std::vector<std::byte>& w,
                         int64_t m, int64_t n, int64_t k, const std::vector<float>& y) {
  std::vector<float> expect((size_t)(m * n));
  ref::matmul({x.data(), w.data(), wdt, expect.data(), m, n, k, nullptr});
  if (quantizes_x(wdt)) CHECK(beyond_bound(y, expect, q8_error_bound(wdt, x, w, m, n, k)) == 0);
  else check_plain_output(label, wdt, x, w, {m, n, k}, y, expect);
}

OpInput weight_of(DType t, int64_t n, int64_t k, const std::vector<std::byte>& bytes) {
  return {OpInput::weight, TensorDesc::contiguous(t, Shape{n, k}), bytes, StepField::none};
}

// One output of run_op as floats.
std::vector<float> run_floats(Device& device, const OpCase& c, size_t output = 0) {
  auto out = run_op(device, c);
  REQUIRE_MESSAGE(out.has_value(), out.status().message());
  REQUIRE(out->size() > output);
  return from_bytes<float>((*out)[output]);
}

}  // namespace

// The packed projections (phi3's attn_qkv and gate/up; what fuse_qkv and
// fuse_gate_up make): each part of the output is what the plain matmul of
// that part's rows gives on the same device, to the bit, and so within the
// matmul's bounds of the reference. Odd row counts and 3-block rows start
// the parts at 2-byte-aligned offsets inside the packed weight.
TEST_CASE("matmul_qkv and matmul_silu_mul over a packed weight equal the unfused ops on every device, bit for bit, odd shapes included") {
  Rng rng(112);
  for (DType wdt : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K, DType::q3_K, DType::q6_K}) {
    const int64_t kb = traits(wdt).quantized ? traits(wdt).block_elems : 32;
    const int64_t k = traits(wdt).quantized ? 3 * kb : 3 * kb + 7;
    const int64_t nq = 19, nkv = 7, f = 13;
    const auto wq = random_weights(wdt, nq, k, rng), wk = random_weights(wdt, nkv, k, rng), wv = random_weights(wdt, nkv, k, rng);
    const auto wg = random_weights(wdt, f, k, rng), wu = random_weights(wdt, f, k, rng);
    std::vector<std::byte> qkv = wq, gate_up = wg;
    qkv.insert(qkv.end(), wk.begin(), wk.end());
    qkv.insert(qkv.end(), wv.begin(), wv.end());
    gate_up.insert(gate_up.end(), wu.begin(), wu.end());
    for (int64_t m : {1, 3, 7}) {  // gemv of one row, of several, gemm
      CAPTURE(name(wdt));
      CAPTURE(m);
      const auto x = rng.floats((size_t)(m * k));
      auto with_x = [&](OpKind op, OpParams params, OpInput w) {
        OpCase c{op, params, {weight_f32(Shape{m, k}, x), std::move(w)}};
        plain_step(c, 1);
        return c;
      };
      const OpCase fused_qkv = with_x(OpKind::matmul_qkv, QkvSplitParams{(int32_t)nq, (int32_t)nkv}, weight_of(wdt, nq + 2 * nkv, k, qkv));
      const OpCase fused_ffn = with_x(OpKind::matmul_silu_mul, NoParams{}, weight_of(wdt, 2 * f, k, gate_up));
      for (auto& d : devices_under_test()) {
        CAPTURE(d.label);
        Device& dev = *d.device;
        for (const OpCase* c : {&fused_qkv, &fused_ffn}) {
          if (const std::string why = unsupported_reason(dev, *c, wdt); !why.empty())
            MESSAGE(d.label << " does not run " << name(c->op) << " with " << name(wdt) << ": " << why);
        }
        if (unsupported_reason(dev, fused_qkv, wdt).empty()) {
          auto out = run_op(dev, fused_qkv);
          REQUIRE_MESSAGE(out.has_value(), out.status().message());
          REQUIRE(out->size() == 3);
          const std::vector<std::byte>* parts[3] = {&wq, &wk, &wv};
          const int64_t rows[3] = {nq, nkv, nkv};
          for (size_t i = 0; i < 3; ++i) {
            CAPTURE(i);
            const std::vector<float> got = from_bytes<float>((*out)[i]);
            CHECK(got == run_floats(dev, with_x(OpKind::matmul, NoParams{}, weight_of(wdt, rows[i], k, *parts[i]))));
            check_matmul_output(d.label, wdt, x, *parts[i], m, rows[i], k, got);
          }
        }
        if (unsupported_reason(dev, fused_ffn, wdt).empty()) {
          const std::vector<float> got = run_floats(dev, fused_ffn);
          const auto gate = run_floats(dev, with_x(OpKind::matmul, NoParams{}, weight_of(wdt, f, k, wg)));
          const auto up = run_floats(dev, with_x(OpKind::matmul, NoParams{}, weight_of(wdt, f, k, wu)));
          OpCase gating{OpKind::silu_mul, NoParams{}, {weight_f32(Shape{m, f}, gate), weight_f32(Shape{m, f}, up)}};
          plain_step(gating, 1);
          CHECK(got == run_floats(dev, gating));
        }
      }
    }
  }
}

// Inside the table the device made at compile time (max_blocks_per_seq
// positions here, no KV), the angles are kernels/rope_math.h's, as on the
// CPU: the rotation is the reference's to the bit. Past it (the case above)
// the device computes them, within 1e-5.
TEST_CASE("rope with freq_scale and frequency factors inside the device's table is the reference's to the bit, on every device") {
  Rng rng(113);
  for (RopeLayout layout : {RopeLayout::interleaved, RopeLayout::half_split}) {
    const int32_t heads = 3, hd = 18, rot = 14, n = 7, positions = 3000;
    RopeParams p{heads, hd, rot, 500000.0f, layout};
    p.freq_scale = 0.25f;
    const auto x = rng.floats((size_t)(n * heads * hd));
    const auto factors = rng.floats((size_t)rot / 2, 1.0f, 32.0f);
    for (bool with_factors : {false, true}) {
      CAPTURE(layout == RopeLayout::interleaved);
      CAPTURE(with_factors);
      OpCase c{OpKind::rope, p, {weight_f32(Shape{n, heads * hd}, x), step(StepField::positions)}};
      if (with_factors) c.inputs.push_back(weight_f32(Shape{rot / 2}, factors));
      plain_step(c, n);
      c.bucket.max_blocks_per_seq = positions;
      c.block_tables.assign((size_t)positions, 0);
      for (auto& pos : c.positions) pos = rng.integer(0, positions - 1);
      c.positions.back() = positions - 1;
      std::vector<float> expect = x;
      ref::rope({expect.data(), c.positions.data(), n, p, nullptr, 0, with_factors ? factors.data() : nullptr});
      on_every_device(c, OpKind::rope, DType::f32, [&](const auto& out) { CHECK(from_bytes<float>(out[0]) == expect); });
    }
  }
}
