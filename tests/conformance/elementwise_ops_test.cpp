// The elementwise primitives (mul, silu, gelu, bias_add) and the fused
// programs (elementwise, matmul_epilogue): each CPU kernel against
// kernels/reference on fresh random inputs at odd sizes, every runnable ISA;
// the fused kernels also against their instructions run one by one as the
// standalone CPU kernels, which they must equal bit for bit (the passes
// promise unchanged results); and every op through the HAL on every device.
#include <string>
#include <vector>

#include "conformance.h"
#include "hal_harness.h"

namespace tessera::testing {
namespace {

using kernels::BiasAddArgs, kernels::ElementwiseArgs, kernels::EpilogueArgs, kernels::MatmulEpilogueArgs, kernels::MulArgs,
    kernels::UnaryArgs;

// The matmul's relative bound (matmul_test.cpp): x rounded to q8 blocks, or
// to bf16 by the CPU's bf16 dot panels, or exact.
double bound(DType t, int64_t m) { return quantizes_x(t) ? 1e-2 : rounds_x_to_bf16("cpu", t, m) ? 4e-3 : 1e-5; }

// A program of 1 to 8 random instructions over n_inputs registers; register
// row_reg (or none, -1) is a bias row, read only as bias_add's b.
ElementwiseProgram random_program(Rng& rng, int n_inputs, int row_reg) {
  ElementwiseProgram p;
  p.n_inputs = (uint8_t)n_inputs;
  p.n_instrs = (uint8_t)rng.integer(1, kEwMaxInstrs);
  auto full_reg = [&](int i) {
    for (;;) {
      const int r = rng.integer(0, n_inputs + i - 1);
      if (r != row_reg) return (uint8_t)r;
    }
  };
  for (int i = 0; i < p.n_instrs; ++i) {
    EwInstr& in = p.instrs[i];
    const int pick = rng.integer(0, row_reg >= 0 ? 5 : 4);  // add, mul, silu, gelu, gelu_f16[, bias_add]
    in.op = pick == 4 ? EwOp::gelu_f16 : pick == 5 ? EwOp::bias_add : (EwOp)pick;
    in.a = full_reg(i);
    in.b = in.op == EwOp::bias_add ? (uint8_t)row_reg : is_unary(in.op) ? (uint8_t)0 : full_reg(i);
  }
  return p;
}

std::string describe(const ElementwiseProgram& p) {
  std::string s;
  for (int i = 0; i < p.n_instrs; ++i)
    s += std::string(name(p.instrs[i].op)) + "(" + std::to_string(p.instrs[i].a) + "," + std::to_string(p.instrs[i].b) + ") ";
  return s;
}

// The program's instructions as the standalone CPU kernels, one after another over whole tensors.
std::vector<float> unfused_cpu(const ElementwiseProgram& p, const std::vector<const float*>& inputs, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  std::vector<std::vector<float>> t((size_t)p.n_instrs, std::vector<float>((size_t)n));
  auto reg = [&](int r) { return r < p.n_inputs ? inputs[(size_t)r] : t[(size_t)(r - p.n_inputs)].data(); };
  for (int i = 0; i < p.n_instrs; ++i) {
    const EwInstr& in = p.instrs[i];
    float* out = t[(size_t)i].data();
    switch (in.op) {
      case EwOp::add: cpu::add({reg(in.a), reg(in.b), out, n}, pool()); break;
      case EwOp::mul: cpu::mul({reg(in.a), reg(in.b), out, n}, pool()); break;
      case EwOp::silu: cpu::silu({reg(in.a), out, n}, pool()); break;
      case EwOp::gelu: cpu::gelu({reg(in.a), out, n}, pool()); break;
      case EwOp::bias_add: cpu::bias_add({reg(in.a), reg(in.b), out, rows, cols}, pool()); break;
      case EwOp::gelu_f16: {  // gelu_mul's GELU alone: times ones, exactly
        const std::vector<float> ones((size_t)n, 1.0f);
        cpu::gelu_mul({reg(in.a), ones.data(), out, n}, pool());
        break;
      }
    }
  }
  return t.back();
}

std::vector<float> cpu_matmul(DType t, const std::vector<float>& x, const std::byte* w, int64_t m, int64_t n, int64_t k) {
  std::vector<float> y((size_t)(m * n));
  AlignedBuffer ws(cpu::matmul_workspace_bytes(t, m, k));
  cpu::matmul({x.data(), w, t, y.data(), m, n, k, ws.data()}, pool());
  return y;
}

// What gelu_f16's table adds to a program's error against the oracle: it
// looks its input up at f16 precision, so where the CPU's values and the
// reference's differ in the last bits an input on an f16 rounding boundary
// takes the neighbouring entry, 2^-11 relative apart, and each lookup in a
// chain can do so again. (A fixed 2e-4 for any program failed about one
// seed in twenty once a matmul's rounding fed two chained lookups.)
double lookup_error(const ElementwiseProgram& p) {
  int lookups = 0;
  for (int i = 0; i < p.n_instrs; ++i) lookups += p.instrs[i].op == EwOp::gelu_f16;
  return lookups * 0x1p-11;
}

}  // namespace

TEST_CASE("mul, silu, gelu and bias_add match the reference at odd sizes on every ISA") {
  Rng rng(test_seed());
  for_each_isa([&](cpu::Isa) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 61}, {17, 513}, {2, 16411}}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const int64_t n = rows * cols;
      const auto a = rng.floats((size_t)n, -6, 6), b = rng.floats((size_t)n, -3, 3), bias = rng.floats((size_t)cols, -2, 2);
      std::vector<float> got((size_t)n), want((size_t)n);
      cpu::mul({a.data(), b.data(), got.data(), n}, pool());
      ref::mul({a.data(), b.data(), want.data(), n});
      CHECK(got == want);  // one f32 product each: exact
      cpu::bias_add({a.data(), bias.data(), got.data(), rows, cols}, pool());
      ref::bias_add({a.data(), bias.data(), want.data(), rows, cols});
      CHECK(got == want);
      // f32 transcendentals against the f64 reference: a few ulps of the
      // output range (|x| <= 6), absolute, since an output near zero (gelu of
      // a negative x) has no meaningful relative error on its own.
      cpu::silu({a.data(), got.data(), n}, pool());
      ref::silu({a.data(), want.data(), n});
      CHECK(max_abs_diff(got, want) < 4e-6);
      cpu::gelu({a.data(), got.data(), n}, pool());
      ref::gelu({a.data(), want.data(), n});
      CHECK(max_abs_diff(got, want) < 4e-6);
      // In place, as the memory plan may place them.
      std::vector<float> in_place = a;
      cpu::gelu({in_place.data(), in_place.data(), n}, pool());
      CHECK(in_place == got);
    }
  });
}

TEST_CASE("gelu is the tanh approximation: known values") {
  const std::vector<float> x = {-3.0f, -1.0f, 0.0f, 0.5f, 1.0f, 3.0f};
  std::vector<float> y(x.size());
  ref::gelu({x.data(), y.data(), (int64_t)x.size()});
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), to 6 digits.
  const double want[] = {-0.00363752, -0.158808, 0.0, 0.345714, 0.841192, 2.99636};
  for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("random elementwise programs equal their instructions run as the standalone kernels, bit for bit") {
  Rng rng(test_seed());
  for_each_isa([&](cpu::Isa) {
    for (int trial = 0; trial < 40; ++trial) {
      const int64_t rows = rng.integer(1, 9), cols = trial % 4 == 0 ? rng.integer(1, 8) : rng.integer(500, 1600);
      const ElementwiseProgram p = random_program(rng, 4, 3);
      CAPTURE(describe(p));
      CAPTURE(rows);
      CAPTURE(cols);
      const int64_t n = rows * cols;
      const auto x0 = rng.floats((size_t)n, -3, 3), x1 = rng.floats((size_t)n, -3, 3), x2 = rng.floats((size_t)n, -3, 3);
      const auto bias = rng.floats((size_t)cols, -1, 1);
      const std::vector<const float*> ins = {x0.data(), x1.data(), x2.data(), bias.data()};
      const std::vector<float> want = unfused_cpu(p, ins, rows, cols);
      ElementwiseArgs e;
      e.program = &p;
      for (int i = 0; i < 4; ++i) e.inputs[i] = ins[(size_t)i];
      std::vector<float> got((size_t)n);
      e.out = got.data();
      e.rows = rows;
      e.cols = cols;
      cpu::elementwise(e, pool());
      CHECK(got == want);
      // Over its first input, as the memory plan may place it.
      std::vector<float> in_place = x0;
      e.inputs[0] = in_place.data();
      e.out = in_place.data();
      cpu::elementwise(e, pool());
      CHECK(in_place == want);
      std::vector<float> oracle((size_t)n);
      e.inputs[0] = x0.data();
      e.out = oracle.data();
      ref::elementwise(e);
      CHECK(rel_error(got, oracle) < 1e-5 + lookup_error(p));
    }
  });
}

TEST_CASE("matmul_epilogue equals the matmul then its program, bit for bit, for every weight dtype, odd shapes and tiles") {
  Rng rng(test_seed());
  const DType types[] = {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K, DType::q5_K, DType::q6_K, DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q2_K, DType::q3_K, DType::iq4_xs};
  for_each_isa([&](cpu::Isa) {
    for (DType t : types)
      for (int64_t m : {1, 3, 70}) {
        CAPTURE(name(t));
        CAPTURE(m);
        const int64_t n = 37, k = traits(t).block_elems == kQK_K ? 256 : 64;
        const ElementwiseProgram p = random_program(rng, 3, 1);  // a0 the product, a1 a bias row, a2 a tensor
        CAPTURE(describe(p));
        const auto w = random_weights(t, n, k, rng);
        const auto x = rng.floats((size_t)(m * k));
        const auto bias = rng.floats((size_t)n), extra = rng.floats((size_t)(m * n), -2, 2);
        const std::vector<float> product = cpu_matmul(t, x, w.data(), m, n, k);
        const std::vector<float> want = unfused_cpu(p, {product.data(), bias.data(), extra.data()}, m, n);
        for (TileParams tile : {TileParams{}, TileParams{1, 1}, TileParams{3000, 5000}}) {
          CAPTURE(tile.weight_block_bytes);
          std::vector<float> got((size_t)(m * n));
          AlignedBuffer ws(cpu::matmul_workspace_bytes(t, m, k));
          MatmulEpilogueArgs a{{x.data(), w.data(), t, got.data(), m, n, k, ws.data(), tile}, {&p, {nullptr, bias.data(), extra.data()}}};
          cpu::matmul_epilogue(a, pool());
          CHECK(got == want);
        }
        std::vector<float> oracle((size_t)(m * n));
        ref::matmul_epilogue({{x.data(), w.data(), t, oracle.data(), m, n, k, nullptr}, {&p, {nullptr, bias.data(), extra.data()}}});
        // Against the independent oracle: the product within the worst case
        // of x's 8-bit rounding where x is quantized, and the whole program
        // within 4x the matmul's bound where ||oracle|| cannot be near zero
        // by chance (no block mins with a single x row, conformance.h).
        if (quantizes_x(t)) {
          std::vector<float> ref_product((size_t)(m * n));
          ref::matmul({x.data(), w.data(), t, ref_product.data(), m, n, k, nullptr});
          CHECK(beyond_bound(product, ref_product, q8_error_bound(t, x, w, m, n, k)) == 0);
        }
        if (!(quantizes_x(t) && has_block_mins(t))) CHECK(rel_error(want, oracle) < bound(t, m) * 4 + lookup_error(p));
      }
  });
}

TEST_CASE("matmul_epilogue with no K still runs the program over the zero product") {
  const ElementwiseProgram p{2, 1, {{EwOp::bias_add, 0, 1}}};
  const std::vector<float> bias = {1.5f, -2.0f, 0.25f};
  std::vector<float> y(6, 7.0f);
  cpu::matmul_epilogue({{nullptr, nullptr, DType::f32, y.data(), 2, 3, 0, nullptr}, {&p, {nullptr, bias.data()}}}, pool());
  CHECK(y == std::vector<float>{1.5f, -2.0f, 0.25f, 1.5f, -2.0f, 0.25f});
}

namespace {

OpInput weight_f32(Shape s, const std::vector<float>& v) {
  return {OpInput::weight, TensorDesc::contiguous(DType::f32, s), as_bytes(v), StepField::none};
}

// One token's step, no KV use: the inputs are weights, so rows are fixed.
OpCase one_op(OpKind op, OpParams params, std::vector<OpInput> inputs) {
  OpCase c{op, params, std::move(inputs)};
  c.n_tokens = 1;
  c.bucket = {1, 1, 1, 1};
  c.token_ids = {0};
  c.positions = {0};
  c.slot_mapping = {0};
  c.query_start = {0, 1};
  c.seq_lens = {1};
  c.block_tables = {0};
  return c;
}

template <class Check>
void on_every_device(const OpCase& c, DType wdt, Check check) {
  auto& devices = devices_under_test();
  REQUIRE(!devices.empty());
  for (auto& d : devices) {
    CAPTURE(d.label);
    const std::string why = unsupported_reason(*d.device, c.op, wdt);
    if (!why.empty()) {
      MESSAGE(d.label << " does not run " << name(c.op) << " with " << name(wdt) << ": " << why);
      CHECK(why.find(std::string(name(c.op))) != std::string::npos);  // the reason names the op
      continue;
    }
    auto out = run_op(*d.device, c);
    REQUIRE_MESSAGE(out.has_value(), out.status().message());
    check(from_bytes<float>((*out)[0]));
  }
}

}  // namespace

TEST_CASE("mul, silu, gelu, bias_add, elementwise and matmul_epilogue match the reference on every device") {
  Rng rng(test_seed());
  const int64_t rows = 5, cols = 67, k = 64;
  const auto x = rng.floats((size_t)(rows * cols), -3, 3), y = rng.floats((size_t)(rows * cols), -3, 3);
  const auto bias = rng.floats((size_t)cols);
  const Shape full{rows, cols};
  for (OpKind op : {OpKind::mul, OpKind::silu, OpKind::gelu, OpKind::bias_add}) {
    CAPTURE(name(op));
    std::vector<float> want(x.size());
    std::vector<OpInput> ins = {weight_f32(full, x)};
    if (op == OpKind::mul) ref::mul({x.data(), y.data(), want.data(), rows * cols}), ins.push_back(weight_f32(full, y));
    if (op == OpKind::silu) ref::silu({x.data(), want.data(), rows * cols});
    if (op == OpKind::gelu) ref::gelu({x.data(), want.data(), rows * cols});
    if (op == OpKind::bias_add) ref::bias_add({x.data(), bias.data(), want.data(), rows, cols}), ins.push_back(weight_f32(Shape{cols}, bias));
    on_every_device(one_op(op, NoParams{}, ins), DType::f32, [&](const std::vector<float>& got) { CHECK(rel_error(got, want) < 1e-6); });
  }
  {
    const ElementwiseProgram p{3, 3, {{EwOp::bias_add, 0, 1}, {EwOp::gelu, 3, 0}, {EwOp::mul, 4, 2}}};
    std::vector<float> want(x.size());
    ElementwiseArgs e;
    e.program = &p;
    e.inputs[0] = x.data();
    e.inputs[1] = bias.data();
    e.inputs[2] = y.data();
    e.out = want.data();
    e.rows = rows;
    e.cols = cols;
    ref::elementwise(e);
    const OpCase c = one_op(OpKind::elementwise, p, {weight_f32(full, x), weight_f32(Shape{cols}, bias), weight_f32(full, y)});
    on_every_device(c, DType::f32, [&](const std::vector<float>& got) { CHECK(rel_error(got, want) < 1e-5); });
  }
  for (DType t : {DType::f32, DType::q8_0}) {
    CAPTURE(name(t));
    const ElementwiseProgram p{3, 3, {{EwOp::bias_add, 0, 1}, {EwOp::silu, 3, 0}, {EwOp::add, 4, 2}}};
    const auto w = random_weights(t, cols, k, rng);
    const auto xa = rng.floats((size_t)(rows * k));
    std::vector<float> want((size_t)(rows * cols));
    ref::matmul_epilogue({{xa.data(), w.data(), t, want.data(), rows, cols, k, nullptr}, {&p, {nullptr, bias.data(), y.data()}}});
    OpInput wi{OpInput::weight, TensorDesc::contiguous(t, Shape{cols, k}), w, StepField::none};
    const OpCase c = one_op(OpKind::matmul_epilogue, p,
                            {weight_f32(Shape{rows, k}, xa), wi, weight_f32(Shape{cols}, bias), weight_f32(full, y)});
    on_every_device(c, t, [&](const std::vector<float>& got) { CHECK(rel_error(got, want) < bound(t, rows)); });
  }
}

}  // namespace tessera::testing
