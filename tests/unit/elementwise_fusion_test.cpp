// Elementwise-chain fusion and matmul epilogues on small hand-written IR: the
// text before, the passes, and the golden text after (each checked by hand
// against the op definitions in docs/ir.md); the chains that must stay
// unfused; the program syntax both ways and its errors; and the llama graph,
// which neither pass may change.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/thread_pool.h"
#include "engine/bench/synthetic_model.h"
#include "engine/runtime/model_graph.h"
#include "graph/parser.h"
#include "graph/pass_manager.h"
#include "graph/printer.h"
#include "graph/verifier.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

std::string after(const std::string& text, const std::string& pipeline, const PassContext& ctx = {}) {
  auto g = parse(text, "test.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  REQUIRE_MESSAGE(verify(*g).is_ok(), verify(*g).message());
  const Status s = run_passes(*g, pipeline, ctx);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  const Status v = verify(*g);
  REQUIRE_MESSAGE(v.is_ok(), v.message());
  // What the passes print reads back to the same text.
  auto again = parse(print(*g), "printed.ir");
  REQUIRE_MESSAGE(again.has_value(), again.status().message());
  CHECK(print(*again) == print(*g));
  return print(*g);
}

// A target with the elementwise primitives but neither fused program op.
class NoProgramKernels : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override {
    if (q.op == OpKind::elementwise || q.op == OpKind::matmul_epilogue) return {false, "", "no program kernels"};
    return {true, "plain", ""};
  }
};

Status parse_error(const std::string& text) {
  auto g = parse(text, "bad.ir");
  if (!g.has_value()) return g.status();
  return verify(*g);
}

const char* const kChain_before = R"(graph @ffn_act {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "b" : f32[32]
  %3 = embedding(%1, %0) : f32[T, 32]  # x
  %4 = embedding(%1, %0) : f32[T, 32]  # u
  %5 = bias_add(%3, %2) : f32[T, 32]  # blk.0.bias
  %6 = gelu(%5) : f32[T, 32]  # blk.0.gelu
  %7 = mul(%6, %4) : f32[T, 32]  # blk.0.gate
  %8 = silu_mul(%7, %4) : f32[T, 32]  # blk.0.silu_mul
  %9 = add(%8, %3) : f32[T, 32]  # blk.0.residual
  return %9
}
)";
const char* const kChain_after = R"(graph @ffn_act {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "b" : f32[32]
  %3 = embedding(%1, %0) : f32[T, 32]  # x
  %4 = embedding(%1, %0) : f32[T, 32]  # u
  %5 = elementwise(%3, %2, %4) {bias_add(a0, a1); gelu(t0); mul(t1, a2); silu(t2); mul(t3, a2); add(t4, a0)} : f32[T, 32]  # blk.0.bias+gelu+gate+silu_mul+residual
  return %5
}
)";

const char* const kMultiUse_before = R"(graph @multi_use {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = embedding(%1, %0) : f32[T, 32]  # x
  %3 = embedding(%1, %0) : f32[T, 32]  # u
  %4 = silu(%2) : f32[T, 32]  # act
  %5 = mul(%4, %3) : f32[T, 32]  # gated
  %6 = add(%4, %5) : f32[T, 32]  # out
  return %6
}
)";
const char* const kMultiUse_after = R"(graph @multi_use {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = embedding(%1, %0) : f32[T, 32]  # x
  %3 = embedding(%1, %0) : f32[T, 32]  # u
  %4 = silu(%2) : f32[T, 32]  # act
  %5 = elementwise(%4, %3) {mul(a0, a1); add(a0, t0)} : f32[T, 32]  # gated+out
  return %5
}
)";

const char* const kReturned_before = R"(graph @returned {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = embedding(%1, %0) : f32[T, 32]  # x
  %3 = embedding(%1, %0) : f32[T, 32]  # u
  %4 = gelu(%2) : f32[T, 32]  # act
  %5 = add(%4, %3) : f32[T, 32]  # out
  return %5, %4
}
)";
const char* const kReturned_after = R"(graph @returned {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = embedding(%1, %0) : f32[T, 32]  # x
  %3 = embedding(%1, %0) : f32[T, 32]  # u
  %4 = gelu(%2) : f32[T, 32]  # act
  %5 = add(%4, %3) : f32[T, 32]  # out
  return %5, %4
}
)";

const char* const kLong_before = R"(graph @long {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = embedding(%1, %0) : f32[T, 32]  # x
  %3 = silu(%2) : f32[T, 32]  # act0
  %4 = gelu(%3) : f32[T, 32]  # act1
  %5 = silu(%4) : f32[T, 32]  # act2
  %6 = gelu(%5) : f32[T, 32]  # act3
  %7 = silu(%6) : f32[T, 32]  # act4
  %8 = gelu(%7) : f32[T, 32]  # act5
  %9 = silu(%8) : f32[T, 32]  # act6
  %10 = gelu(%9) : f32[T, 32]  # act7
  %11 = silu(%10) : f32[T, 32]  # act8
  %12 = gelu(%11) : f32[T, 32]  # act9
  return %12
}
)";
const char* const kLong_after = R"(graph @long {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = embedding(%1, %0) : f32[T, 32]  # x
  %3 = elementwise(%2) {silu(a0); gelu(t0)} : f32[T, 32]  # act0+act1
  %4 = elementwise(%3) {silu(a0); gelu(t0); silu(t1); gelu(t2); silu(t3); gelu(t4); silu(t5); gelu(t6)} : f32[T, 32]  # act2+act3+act4+act5+act6+act7+act8+act9
  return %4
}
)";

const char* const kBiasGelu_before = R"(graph @qkv_bias {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "w_up" : q8_0[64, 32]
  %3 = weight "b_up" : f32[64]
  %4 = embedding(%1, %0) : f32[T, 32]  # x
  %5 = matmul(%4, %2) : f32[T, 64]  # blk.0.ffn_up
  %6 = bias_add(%5, %3) : f32[T, 64]  # blk.0.ffn_up_bias
  %7 = gelu(%6) : f32[T, 64]  # blk.0.ffn_gelu
  return %7
}
)";
const char* const kBiasGelu_after = R"(graph @qkv_bias {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "w_up" : q8_0[64, 32]
  %3 = weight "b_up" : f32[64]
  %4 = embedding(%1, %0) : f32[T, 32]  # x
  %5 = matmul_epilogue(%4, %2, %3) {bias_add(a0, a1); gelu(t0)} : f32[T, 64]  # blk.0.ffn_up+ffn_up_bias+ffn_gelu
  return %5
}
)";

const char* const kGatedResidual_before = R"(graph @gated_residual {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "w" : q4_0[32, 32]
  %3 = embedding(%1, %0) : f32[T, 32]  # x
  %4 = embedding(%1, %0) : f32[T, 32]  # u
  %5 = matmul(%3, %2) : f32[T, 32]  # blk.0.proj
  %6 = mul(%5, %4) : f32[T, 32]  # blk.0.gate
  %7 = add(%3, %6) : f32[T, 32]  # blk.0.residual
  %8 = matmul(%7, %2) : f32[T, 32]  # blk.1.proj
  %9 = add(%7, %8) : f32[T, 32]  # blk.1.residual
  %10 = matmul(%9, %2) : f32[T, 32]  # out.proj
  %11 = silu(%10) : f32[T, 32]  # out.act
  return %11, %10
}
)";
const char* const kGatedResidual_after = R"(graph @gated_residual {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "w" : q4_0[32, 32]
  %3 = embedding(%1, %0) : f32[T, 32]  # x
  %4 = embedding(%1, %0) : f32[T, 32]  # u
  %5 = matmul_epilogue(%3, %2, %4, %3) {mul(a0, a1); add(a2, t0)} : f32[T, 32]  # blk.0.proj+gate+residual
  %6 = matmul_add(%5, %2, %5) : f32[T, 32]  # blk.1.proj+residual
  %7 = matmul(%6, %2) : f32[T, 32]  # out.proj
  %8 = silu(%7) : f32[T, 32]  # out.act
  return %8, %7
}
)";

}  // namespace

TEST_CASE("fuse_elementwise folds a bias, gelu, gating, silu_mul and residual chain into one program") {
  CHECK(after(kChain_before, "fuse_elementwise") == kChain_after);
}

TEST_CASE("fuse_elementwise keeps a value read twice as its own node, and fuses what reads it") {
  CHECK(after(kMultiUse_before, "fuse_elementwise") == kMultiUse_after);
}

TEST_CASE("fuse_elementwise leaves a chain alone when its intermediate is a graph output") {
  CHECK(after(kReturned_before, "fuse_elementwise") == kReturned_after);
  CHECK(std::string(kReturned_before) == kReturned_after);
}

TEST_CASE("fuse_elementwise splits a chain of 10 ops into programs of at most 8 instructions") {
  CHECK(after(kLong_before, "fuse_elementwise") == kLong_after);
}

TEST_CASE("fuse_matmul_epilogue puts a bias and gelu behind the matmul") {
  CHECK(after(kBiasGelu_before, "fuse_matmul_epilogue") == kBiasGelu_after);
}

TEST_CASE("fuse_matmul_residual keeps its pattern, the epilogue takes a gated residual, not a product read twice") {
  CHECK(after(kGatedResidual_before, "fuse_matmul_residual,fuse_matmul_epilogue,fuse_elementwise") == kGatedResidual_after);
}

TEST_CASE("a target without the program kernels keeps every pattern unfused") {
  NoProgramKernels k;
  PassContext ctx{{"noprog", 0}, &k, nullptr, {}};
  for (const char* text : {kChain_before, kBiasGelu_before, kLong_before}) {
    auto g = parse(text, "test.ir");
    REQUIRE(g.has_value());
    CHECK(after(text, "fuse_matmul_epilogue,fuse_elementwise", ctx) == print(*g));
  }
}

TEST_CASE("the default pipeline runs both passes, after the llama fusions") {
  const auto& order = default_pipeline("cpu");
  auto at = [&](const char* n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(at("fuse_matmul_epilogue") > at("fuse_matmul_residual"));
  CHECK(at("fuse_matmul_epilogue") > at("fuse_residual_norm"));
  CHECK(at("fuse_matmul_epilogue") > at("fuse_gate_up"));
  CHECK(at("fuse_elementwise") > at("fuse_matmul_epilogue"));
  CHECK(at("fuse_elementwise") < (std::ptrdiff_t)order.size());
}

TEST_CASE("on a llama graph neither new pass changes anything") {
  for (DType t : {DType::q8_0, DType::f32}) {
    CAPTURE(name(t));
    ThreadPool pool(1);
    SyntheticSpec spec;
    spec.config.dim = 64;
    spec.config.hidden_dim = 96;
    spec.config.n_layers = 2;
    spec.config.n_heads = 4;
    spec.config.n_kv_heads = 2;
    spec.config.vocab_size = 64;
    spec.config.context_length = 64;
    spec.config.rope_dims = 16;
    spec.weight_type = t;
    auto w = make_synthetic_llama(spec, pool);
    REQUIRE_MESSAGE(w.has_value(), w.status().message());
    auto g = build_model_graph(*w, KvLayout{4, 16});
    REQUIRE_MESSAGE(g.has_value(), g.status().message());
    Graph with = *g, without = *g;
    REQUIRE(run_passes(with, "default", PassContext{}).is_ok());
    REQUIRE(run_passes(without, "default,-fuse_matmul_epilogue,-fuse_elementwise", PassContext{}).is_ok());
    CHECK(print(with) == print(without));
    CHECK(with.nodes.size() == 2 * 6 + 5);
  }
}

TEST_CASE("elementwise programs print and parse back exactly, every instruction included") {
  const std::string text = R"(graph @prog {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 8]
  %2 = weight "b" : f32[8]
  %3 = weight "w" : f16[8, 8]
  %4 = embedding(%1, %0) : f32[T, 8]  # x
  %5 = elementwise(%4, %2, %4) {bias_add(a0, a1); silu(t0); gelu(t1); mul(t2, a2); add(a0, t3)} : f32[T, 8]  # ew
  %6 = matmul_epilogue(%5, %3, %2, %4) {bias_add(a0, a1); gelu(t0); mul(t1, a2)} : f32[T, 8]  # mm
  return %6
}
)";
  auto g = parse(text, "prog.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  CHECK(verify(*g).is_ok());
  CHECK(print(*g) == text);
  const auto& p = std::get<ElementwiseProgram>(g->nodes[1].params);
  CHECK(p.n_inputs == 3);
  CHECK(p.n_instrs == 5);
  CHECK(p.instrs[4] == EwInstr{EwOp::add, 0, 6});
  CHECK(p.is_row_input(1));
  CHECK(!p.is_row_input(0));
}

TEST_CASE("bad programs are refused with one line naming the node and what was expected") {
  const std::string head = R"(graph @bad {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 8]
  %2 = weight "b" : f32[8]
  %3 = embedding(%1, %0) : f32[T, 8]  # x
)";
  auto err = [&](const std::string& node) {
    const Status s = parse_error(head + "  " + node + "  # ew\n  return %4\n}\n");
    CHECK(!s.is_ok());
    CHECK(s.message().find('\n') == std::string::npos);
    return s.message();
  };
  CHECK(err("%4 = elementwise(%3) {mul(a0, a1)} : f32[T, 8]").find("expected a register a0..a0, got 'a1'") != std::string::npos);
  CHECK(err("%4 = elementwise(%3) {silu(t0)} : f32[T, 8]").find("got 't0'") != std::string::npos);
  CHECK(err("%4 = elementwise(%3) {relu(a0)} : f32[T, 8]").find("an instruction (add, mul, silu, gelu, bias_add, gelu_f16), got 'relu'") != std::string::npos);
  CHECK(err("%4 = elementwise(%3) {} : f32[T, 8]").find("at least one instruction") != std::string::npos);
  CHECK(err("%4 = elementwise(%3, %2) {silu(a0); bias_add(t0, t0)} : f32[T, 8]").find("the bias must be an input register") != std::string::npos);
  CHECK(err("%4 = elementwise(%3, %2) {add(a0, a1)} : f32[T, 8]").find("a1 f32[8] is not") != std::string::npos);
  CHECK(err("%4 = elementwise(%3, %3) {bias_add(a0, a1)} : f32[T, 8]").find("bias a1") != std::string::npos);
  CHECK(err("%4 = bias_add(%3, %1) : f32[T, 8]").find("bias must be f32[8] (one row of x), got f32[16, 8]") != std::string::npos);
  CHECK(err("%4 = elementwise(%3) {silu(a0); silu(t0); silu(t1); silu(t2); silu(t3); silu(t4); silu(t5); silu(t6); silu(t7)} : f32[T, 8]")
            .find("at most 8 instructions") != std::string::npos);
}
