// The repack_weights pass and the weight layout in the IR: golden text on a
// small hand-written graph, the round trip through the printer and parser,
// and the verifier's and parser's one-line refusals.
#include <doctest/doctest.h>

#include <algorithm>

#include "backends/cpu/cpu_kernel_table.h"
#include "kernels/cpu/cpu_kernels.h"
#include "graph/parser.h"
#include "graph/pass_manager.h"
#include "graph/printer.h"
#include "graph/verifier.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

// A target whose matmul kernels prefer rows_x4 for the quantized weights that can hold it.
class X4Kernels : public KernelTable {
 public:
  KernelChoice query(const OpQuery&) const override { return {true, "any", ""}; }
  WeightLayout preferred_weight_layout(const LayoutQuery& q) const override {
    return q.weight_dtype == DType::q8_0 || q.weight_dtype == DType::q4_0 ? WeightLayout::rows_x4 : WeightLayout::rows;
  }
  bool reads_weight_layout(const LayoutQuery&, WeightLayout) const override { return true; }
};

// The same preference on a target whose embedding reads its table in rows only.
class X4RowsEmbedding : public X4Kernels {
 public:
  bool reads_weight_layout(const LayoutQuery& q, WeightLayout l) const override {
    return l == WeightLayout::rows || q.op != OpKind::embedding;
  }
};

std::string after(const std::string& text, const std::string& pipeline, const PassContext& ctx) {
  auto g = parse(text, "test.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  REQUIRE_MESSAGE(verify(*g).is_ok(), verify(*g).message());
  const Status s = run_passes(*g, pipeline, ctx);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  REQUIRE_MESSAGE(verify(*g).is_ok(), verify(*g).message());
  return print(*g);
}

// token_embd is tied: the embedding table and the classifier.
const char* const kRepack_before = R"(graph @repack {
  %0 = input "token_ids" : i32[T]
  %1 = weight "token_embd" : q8_0[16, 32]
  %2 = weight "wq" : q8_0[30, 32]
  %3 = weight "w_gate+w_up" : q4_0[128, 32] {pack=concat_rows("w_gate", "w_up")}
  %4 = weight "w_proj" : f32[8, 64]
  %5 = embedding(%1, %0) : f32[T, 32]  # embd
  %6 = matmul(%5, %2) : f32[T, 30]  # blk.0.attn_q
  %7 = matmul_silu_mul(%5, %3) : f32[T, 64]  # blk.0.ffn_gate+ffn_up+silu
  %8 = matmul(%7, %4) : f32[T, 8]  # proj
  %9 = matmul(%5, %1) : f32[T, 16]  # output
  return %9, %8, %6
}
)";
const char* const kRepack_after = R"(graph @repack {
  %0 = input "token_ids" : i32[T]
  %1 = weight "token_embd" : q8_0[16, 32] {layout=rows_x4}
  %2 = weight "wq" : q8_0[30, 32] {layout=rows_x4}
  %3 = weight "w_gate+w_up" : q4_0[128, 32] {pack=concat_rows("w_gate", "w_up"), layout=rows_x4}
  %4 = weight "w_proj" : f32[8, 64]
  %5 = embedding(%1, %0) : f32[T, 32]  # embd
  %6 = matmul(%5, %2) : f32[T, 30]  # blk.0.attn_q
  %7 = matmul_silu_mul(%5, %3) : f32[T, 64]  # blk.0.ffn_gate+ffn_up+silu
  %8 = matmul(%7, %4) : f32[T, 8]  # proj
  %9 = matmul(%5, %1) : f32[T, 16]  # output
  return %9, %8, %6
}
)";

}  // namespace

TEST_CASE("repack_weights gives quantized matmul weights the target's layout, the tied embedding too where its embedding reads it") {
  X4Kernels x4;
  PassContext ctx;
  ctx.kernels = &x4;
  CHECK(after(kRepack_before, "repack_weights", ctx) == kRepack_after);
  // An embedding that reads rows only keeps the tied table in rows for both readers.
  X4RowsEmbedding rows_embedding;
  ctx.kernels = &rows_embedding;
  std::string want = kRepack_after;
  const std::string tied = "weight \"token_embd\" : q8_0[16, 32]";
  want.replace(want.find(tied), tied.size() + std::string(" {layout=rows_x4}").size(), tied);
  CHECK(after(kRepack_before, "repack_weights", ctx) == want);
}

TEST_CASE("repack_weights changes nothing without a kernel table, and on the cpu gives what its matmul reads fastest") {
  CHECK(after(kRepack_before, "repack_weights", PassContext{}) == kRepack_before);
  // The cpu prefers rows_x16 for q8_0/q4_0 and f32/f16/bf16 where its ISA
  // family has panel kernels (AVX-512 VNNI), else rows (docs/ir.md,
  // "Weight layouts"). The tied embedding follows: the cpu's embedding reads
  // every layout.
  cpu::CpuKernelTable cpu_table;
  PassContext ctx;
  ctx.kernels = &cpu_table;
  std::string want = kRepack_before;
  if (kernels::cpu::matmul_preferred_layout(DType::q8_0) == WeightLayout::rows_x16) {
    want = kRepack_after;
    for (size_t at; (at = want.find("rows_x4")) != std::string::npos;) want.replace(at, 7, "rows_x16");
  }
  if (kernels::cpu::matmul_preferred_layout(DType::f32) == WeightLayout::rows_x16) {
    const std::string f32_weight = "weight \"w_proj\" : f32[8, 64]";
    want.replace(want.find(f32_weight), f32_weight.size(), f32_weight + " {layout=rows_x16}");
  }
  CHECK(after(kRepack_before, "repack_weights", ctx) == want);
}

TEST_CASE("--weight-layout rows_x4 asks for x4 wherever the cpu kernels read it, rows undoes a preference") {
  cpu::CpuKernelTable cpu_table;
  PassContext ctx;
  ctx.kernels = &cpu_table;
  ctx.weight_layout_override = parse_weight_layout_override("rows_x4").value();
  CHECK(after(kRepack_before, "repack_weights", ctx) == kRepack_after);
  X4Kernels x4;
  ctx.kernels = &x4;
  ctx.weight_layout_override = parse_weight_layout_override("rows").value();
  CHECK(after(kRepack_before, "repack_weights", ctx) == kRepack_before);
  CHECK_FALSE(parse_weight_layout_override("auto").value().has_value());
  const auto bad = parse_weight_layout_override("cols");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.status().message() == "--weight-layout: 'cols'; expected auto, rows, rows_x4 or rows_x16");
}

TEST_CASE("the default pipeline runs repack_weights after the fusions and before tile") {
  const auto p = default_pipeline("cpu");
  const auto at = [&](const char* n) { return std::find(p.begin(), p.end(), n) - p.begin(); };
  CHECK(at("repack_weights") < (long)p.size());
  CHECK(at("repack_weights") > at("fuse_residual_norm"));
  CHECK(at("repack_weights") < at("tile"));
}

TEST_CASE("a weight's layout prints, parses back and survives the round trip") {
  auto g = parse(kRepack_after, "test.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  CHECK(g->value(2).layout == WeightLayout::rows_x4);
  CHECK(g->value(3).layout == WeightLayout::rows_x4);
  CHECK(g->value(3).packed_from.size() == 2);
  CHECK(g->value(1).layout == WeightLayout::rows_x4);
  CHECK(print(*g) == kRepack_after);
}

TEST_CASE("bad layouts get one line naming the weight and what was expected") {
  auto parse_error = [](const std::string& line) {
    const std::string text = "graph @g {\n  %0 = input \"token_ids\" : i32[T]\n" + line +
                             "\n  %2 = embedding(%1, %0) : f32[T, 32]  # e\n  return %2\n}\n";
    auto g = parse(text, "bad.ir");
    REQUIRE(!g.has_value());
    return g.status().message();
  };
  CHECK(parse_error("  %1 = weight \"w\" : q8_0[16, 32] {layout=cols}").find("layout=rows, layout=rows_x4 or layout=rows_x16 on a weight, got layout=cols") !=
        std::string::npos);

  CHECK(parse_error("  %1 = kv_pool \"k\" : f32[16, 32] {layout=rows_x4}").find("expected layout= only on a weight, not on 'kv_pool'") !=
        std::string::npos);

  auto verify_error = [](const std::string& text) {
    auto g = parse(text, "bad.ir");
    REQUIRE_MESSAGE(g.has_value(), g.status().message());
    const Status s = verify(*g);
    REQUIRE(!s.is_ok());
    return s.message();
  };
  CHECK(verify_error(R"(graph @g {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "w" : f32[8, 32] {layout=rows_x4}
  %3 = embedding(%1, %0) : f32[T, 32]  # e
  %4 = matmul(%3, %2) : f32[T, 8]  # mm
  return %4
}
)") == "verify: 'w': layout=rows_x4 holds q8_0 or q4_0 weights, got f32");
  CHECK(verify_error(R"(graph @g {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32] {layout=rows_x16}
  %2 = weight "w" : f32[8, 32]
  %3 = embedding(%1, %0) : f32[T, 32]  # embd
  %4 = matmul(%3, %1) : f32[T, 16]  # output
  %5 = matmul(%1, %2) : f32[16, 8]  # from_table
  return %4, %5
}
)") == "verify: from_table: reads 'emb' (layout=rows_x16) as input 0; only a matmul's weight (input 1) or an embedding's table (input 0) may have a layout other than rows");
}
