// The pass manager and each pass on small hand-written IR: the text before,
// the pass, and the golden text after. Every graph is verified after every pass.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

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
  return print(*g);
}

// A target with no fused kernels: every fusion must leave its pattern alone.
class UnfusedKernels : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override {
    if ((int)q.op >= (int)OpKind::matmul_add) return {false, "", "no fused kernels"};
    return {true, "plain", ""};
  }
};

const char* const kDce_before = R"(graph @dead {
  %0 = input "token_ids" : i32[T]
  %1 = input "slot_mapping" : i32[T]
  %2 = weight "emb" : f32[16, 16]
  %3 = weight "unused" : f32[16, 16]
  %4 = kv_pool "k_cache" : f32[64, 16]
  %5 = kv_pool "v_cache" : f32[64, 16]
  %6 = embedding(%2, %0) : f32[T, 16]  # x
  %7 = matmul(%6, %3) : f32[T, 16]  # dead_matmul
  %8 = add(%7, %6) : f32[T, 16]  # dead_add
  %9, %10 = kv_append(%6, %6, %1, %4, %5) {kv_heads=2, head_dim=8, block_size=16} : f32[64, 16], f32[64, 16]  # kept_kv_write
  %11 = add(%6, %6) : f32[T, 16]  # out
  return %11
}
)";
const char* const kDce_after = R"(graph @dead {
  %0 = input "token_ids" : i32[T]
  %1 = input "slot_mapping" : i32[T]
  %2 = weight "emb" : f32[16, 16]
  %3 = kv_pool "k_cache" : f32[64, 16]
  %4 = kv_pool "v_cache" : f32[64, 16]
  %5 = embedding(%2, %0) : f32[T, 16]  # x
  %6, %7 = kv_append(%5, %5, %1, %3, %4) {kv_heads=2, head_dim=8, block_size=16} : f32[64, 16], f32[64, 16]  # kept_kv_write
  %8 = add(%5, %5) : f32[T, 16]  # out
  return %8
}
)";

const char* const kShapeInference_before = R"(graph @shapes {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 8]
  %2 = weight "w" : f16[24, 8]
  %3 = embedding(%1, %0) : f32[T, 8]  # embd
  %4 = matmul(%3, %2) : f32[T, 24]  # proj
  return %4
}
)";
const char* const kShapeInference_after = R"(graph @shapes {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 8]
  %2 = weight "w" : f16[24, 8]
  %3 = embedding(%1, %0) : f32[T, 8]  # embd
  %4 = matmul(%3, %2) : f32[T, 24]  # proj
  return %4
}
)";

const char* const kFuseQkv_before = R"(graph @attn {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "wq" : q8_0[32, 32]
  %3 = weight "wk" : q8_0[16, 32]
  %4 = weight "wv" : q8_0[16, 32]
  %5 = embedding(%1, %0) : f32[T, 32]  # embd
  %6 = matmul(%5, %2) : f32[T, 32]  # blk.0.attn_q
  %7 = matmul(%5, %3) : f32[T, 16]  # blk.0.attn_k
  %8 = matmul(%5, %4) : f32[T, 16]  # blk.0.attn_v
  %9 = add(%7, %8) : f32[T, 16]  # kv_sum
  return %6, %9
}
)";
const char* const kFuseQkv_after = R"(graph @attn {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %7 = weight "wq+wk+wv" : q8_0[64, 32] {pack=concat_rows("wq", "wk", "wv")}
  %2 = embedding(%1, %0) : f32[T, 32]  # embd
  %3, %4, %5 = matmul_qkv(%2, %7) {q_rows=32, kv_rows=16} : f32[T, 32], f32[T, 16], f32[T, 16]  # blk.0.attn_qkv
  %6 = add(%4, %5) : f32[T, 16]  # kv_sum
  return %3, %6
}
)";

const char* const kFuseGateUp_before = R"(graph @ffn {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "norm" : f32[32]
  %3 = weight "w_gate" : q4_0[64, 32]
  %4 = weight "w_up" : q4_0[64, 32]
  %5 = weight "w_down" : q4_0[32, 64]
  %6 = embedding(%1, %0) : f32[T, 32]  # embd
  %7 = rms_norm(%6, %2) {eps=1e-05} : f32[T, 32]  # ffn_norm
  %8 = matmul(%7, %3) : f32[T, 64]  # blk.0.ffn_gate
  %9 = matmul(%7, %4) : f32[T, 64]  # blk.0.ffn_up
  %10 = silu_mul(%8, %9) : f32[T, 64]  # blk.0.ffn_silu_mul
  %11 = matmul(%10, %5) : f32[T, 32]  # blk.0.ffn_down
  %12 = add(%6, %11) : f32[T, 32]  # blk.0.ffn_residual
  return %12
}
)";
const char* const kFuseGateUp_after = R"(graph @ffn {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "norm" : f32[32]
  %3 = weight "w_down" : q4_0[32, 64]
  %9 = weight "w_gate+w_up" : q4_0[128, 32] {pack=concat_rows("w_gate", "w_up")}
  %4 = embedding(%1, %0) : f32[T, 32]  # embd
  %5 = rms_norm(%4, %2) {eps=1e-05} : f32[T, 32]  # ffn_norm
  %6 = matmul_silu_mul(%5, %9) : f32[T, 64]  # blk.0.ffn_gate+ffn_up+silu
  %7 = matmul(%6, %3) : f32[T, 32]  # blk.0.ffn_down
  %8 = add(%4, %7) : f32[T, 32]  # blk.0.ffn_residual
  return %8
}
)";

const char* const kFuseMatmulResidual_before = R"(graph @ffn {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "norm" : f32[32]
  %3 = weight "w_gate" : q4_0[64, 32]
  %4 = weight "w_up" : q4_0[64, 32]
  %5 = weight "w_down" : q4_0[32, 64]
  %6 = embedding(%1, %0) : f32[T, 32]  # embd
  %7 = rms_norm(%6, %2) {eps=1e-05} : f32[T, 32]  # ffn_norm
  %8 = matmul(%7, %3) : f32[T, 64]  # blk.0.ffn_gate
  %9 = matmul(%7, %4) : f32[T, 64]  # blk.0.ffn_up
  %10 = silu_mul(%8, %9) : f32[T, 64]  # blk.0.ffn_silu_mul
  %11 = matmul(%10, %5) : f32[T, 32]  # blk.0.ffn_down
  %12 = add(%6, %11) : f32[T, 32]  # blk.0.ffn_residual
  return %12
}
)";
const char* const kFuseMatmulResidual_after = R"(graph @ffn {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "norm" : f32[32]
  %3 = weight "w_gate" : q4_0[64, 32]
  %4 = weight "w_up" : q4_0[64, 32]
  %5 = weight "w_down" : q4_0[32, 64]
  %6 = embedding(%1, %0) : f32[T, 32]  # embd
  %7 = rms_norm(%6, %2) {eps=1e-05} : f32[T, 32]  # ffn_norm
  %8 = matmul(%7, %3) : f32[T, 64]  # blk.0.ffn_gate
  %9 = matmul(%7, %4) : f32[T, 64]  # blk.0.ffn_up
  %10 = silu_mul(%8, %9) : f32[T, 64]  # blk.0.ffn_silu_mul
  %11 = matmul_add(%10, %5, %6) : f32[T, 32]  # blk.0.ffn_down+residual
  return %11
}
)";

const char* const kFuseRopeKvAppend_before = R"(graph @prologue {
  %0 = input "token_ids" : i32[T]
  %1 = input "positions" : i32[T]
  %2 = input "slot_mapping" : i32[T]
  %3 = input "query_start" : i32[1]
  %4 = input "seq_lens" : i32[1]
  %5 = input "block_tables" : i32[1]
  %6 = weight "emb" : f32[16, 32]
  %7 = weight "emb_kv" : f32[16, 16]
  %8 = kv_pool "k_cache" : f32[64, 16]
  %9 = kv_pool "v_cache" : f32[64, 16]
  %10 = embedding(%6, %0) : f32[T, 32]  # q
  %11 = embedding(%7, %0) : f32[T, 16]  # k
  %12 = embedding(%7, %0) : f32[T, 16]  # v
  %13 = rope(%10, %1) {heads=4, head_dim=8, rot_dims=8, theta=10000, layout=interleaved} : f32[T, 32]  # blk.0.rope_q
  %14 = rope(%11, %1) {heads=2, head_dim=8, rot_dims=8, theta=10000, layout=interleaved} : f32[T, 16]  # blk.0.rope_k
  %15, %16 = kv_append(%14, %12, %2, %8, %9) {kv_heads=2, head_dim=8, block_size=16} : f32[64, 16], f32[64, 16]  # blk.0.kv_append
  %17 = paged_attention(%13, %15, %16, %1, %3, %4, %5) {heads=4, kv_heads=2, head_dim=8, block_size=16, scale=0.35355338, causal=true} : f32[T, 32]  # blk.0.attention
  return %17
}
)";
const char* const kFuseRopeKvAppend_after = R"(graph @prologue {
  %0 = input "token_ids" : i32[T]
  %1 = input "positions" : i32[T]
  %2 = input "slot_mapping" : i32[T]
  %3 = input "query_start" : i32[1]
  %4 = input "seq_lens" : i32[1]
  %5 = input "block_tables" : i32[1]
  %6 = weight "emb" : f32[16, 32]
  %7 = weight "emb_kv" : f32[16, 16]
  %8 = kv_pool "k_cache" : f32[64, 16]
  %9 = kv_pool "v_cache" : f32[64, 16]
  %10 = embedding(%6, %0) : f32[T, 32]  # q
  %11 = embedding(%7, %0) : f32[T, 16]  # k
  %12 = embedding(%7, %0) : f32[T, 16]  # v
  %13, %14, %15 = rope_kv_append(%10, %11, %12, %1, %2, %8, %9) {heads=4, head_dim=8, rot_dims=8, theta=10000, layout=interleaved, kv_heads=2, block_size=16} : f32[T, 32], f32[64, 16], f32[64, 16]  # blk.0.rope_kv_append
  %16 = paged_attention(%13, %14, %15, %1, %3, %4, %5) {heads=4, kv_heads=2, head_dim=8, block_size=16, scale=0.35355338, causal=true} : f32[T, 32]  # blk.0.attention
  return %16
}
)";

const char* const kFuseResidualNorm_before = R"(graph @residual_norm {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "norm" : f32[32]
  %3 = weight "w" : q8_0[32, 32]
  %4 = embedding(%1, %0) : f32[T, 32]  # embd
  %5 = matmul(%4, %3) : f32[T, 32]  # blk.0.proj
  %6 = add(%4, %5) : f32[T, 32]  # blk.0.residual
  %7 = rms_norm(%6, %2) {eps=1e-05} : f32[T, 32]  # blk.0.ffn_norm
  %8 = add(%6, %7) : f32[T, 32]  # blk.1.residual
  %9 = rms_norm(%8, %2) {eps=1e-05} : f32[T, 32]  # blk.1.attn_norm
  return %9, %8
}
)";
const char* const kFuseResidualNorm_after = R"(graph @residual_norm {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 32]
  %2 = weight "norm" : f32[32]
  %3 = weight "w" : q8_0[32, 32]
  %4 = embedding(%1, %0) : f32[T, 32]  # embd
  %5, %6 = matmul_add_rms_norm(%4, %3, %4, %2) {eps=1e-05} : f32[T, 32], f32[T, 32]  # blk.0.proj+residual+ffn_norm
  %7, %8 = add_rms_norm(%5, %6, %2) {eps=1e-05} : f32[T, 32], f32[T, 32]  # blk.1.residual+attn_norm
  return %8, %7
}
)";

}  // namespace

TEST_CASE("dead-code elimination removes unread nodes and weights, keeps the KV write") { CHECK(after(kDce_before, "dce") == kDce_after); }

TEST_CASE("shape inference leaves a consistent graph as it is") { CHECK(after(kShapeInference_before, "shape_inference") == kShapeInference_after); }

TEST_CASE("fuse_qkv packs three projections of one input into one matmul_qkv") { CHECK(after(kFuseQkv_before, "fuse_qkv") == kFuseQkv_after); }

TEST_CASE("fuse_gate_up packs gate and up and fuses the SiLU gating") { CHECK(after(kFuseGateUp_before, "fuse_gate_up") == kFuseGateUp_after); }

TEST_CASE("fuse_matmul_residual folds the residual add into the matmul") { CHECK(after(kFuseMatmulResidual_before, "fuse_matmul_residual") == kFuseMatmulResidual_after); }

TEST_CASE("fuse_rope_kv_append makes one attention prologue of both ropes and the append") { CHECK(after(kFuseRopeKvAppend_before, "fuse_rope_kv_append") == kFuseRopeKvAppend_after); }

TEST_CASE("a target without the fused kernels keeps every unfused pattern") {
  UnfusedKernels unfused;
  PassContext ctx{{"unfused", 0}, &unfused};
  for (const char* text : {kFuseQkv_before, kFuseGateUp_before, kFuseRopeKvAppend_before, kFuseResidualNorm_before}) {
    auto g = parse(text, "test.ir");
    REQUIRE(g.has_value());
    CHECK(after(text, "fuse_qkv,fuse_gate_up,fuse_matmul_residual,fuse_rope_kv_append,fuse_residual_norm", ctx) == print(*g));
  }
}

TEST_CASE("the default pipeline applies every fusion and the result parses back") {
  const std::string text = after(kFuseGateUp_before, "default");
  CHECK(text.find("matmul_silu_mul") != std::string::npos);
  CHECK(text.find("matmul_add") != std::string::npos);
  auto g = parse(text, "after.ir");
  REQUIRE(g.has_value());
  CHECK(print(*g) == text);
}

TEST_CASE("pipelines: default, none, removing one pass, and an unknown pass named in the error") {
  auto d = parse_pipeline("default", "cpu");
  REQUIRE(d.has_value());
  CHECK(d->size() == default_pipeline("cpu").size());
  auto none = parse_pipeline("none", "cpu");
  REQUIRE(none.has_value());
  CHECK(none->empty());
  auto minus = parse_pipeline("default,-fuse_qkv", "cpu");
  REQUIRE(minus.has_value());
  for (const PassInfo* p : *minus) CHECK(std::string(p->name) != "fuse_qkv");
  CHECK(minus->size() == d->size() - 1);
  auto bad = parse_pipeline("default,fuse_everything", "cpu");
  REQUIRE(!bad.has_value());
  CHECK(bad.status().message().find("--passes: 'fuse_everything' is not a pass") != std::string::npos);
  auto bad_minus = parse_pipeline("default,-nothing", "cpu");
  CHECK(!bad_minus.has_value());
}

TEST_CASE("print-after and timing report each pass that ran") {
  auto g = parse(kFuseGateUp_before, "test.ir");
  REQUIRE(g.has_value());
  auto pipeline = parse_pipeline("fuse_gate_up,fuse_matmul_residual", "cpu");
  REQUIRE(pipeline.has_value());
  PipelineOptions o;
  o.verify_each = true;
  o.print_after = {"fuse_gate_up"};
  std::vector<std::string> printed;
  o.print = [&](const std::string& s) { printed.push_back(s); };
  std::vector<PassTiming> timings;
  REQUIRE(run_pipeline(*g, *pipeline, {}, o, &timings).is_ok());
  REQUIRE(printed.size() == 1);
  CHECK(printed[0].find("// after fuse_gate_up\n") == 0);
  REQUIRE(timings.size() == 2);
  CHECK(timings[1].pass == "fuse_matmul_residual");
  CHECK(timings[1].nodes_after == 4);
}

TEST_CASE("tile sets each matmul's tiles from the device, the cost model keeps tiny ops whole, --tile overrides") {
  DeviceInfo d;
  d.compute_units = 4;
  d.l2_bytes = 512 * 1024;
  d.roofs.read_GBps = 10;  // 10 kB per microsecond
  d.roofs.f32_GFLOPs = 100;
  PassContext ctx;
  ctx.device = &d;
  const std::string text = after(kFuseMatmulResidual_before, "fuse_matmul_residual,tile", ctx);
  // w_gate, w_up: 64 x 32 q4_0 = 1152 B each: ~0.2 us at the roofs, less than a pool round trip per core.
  CHECK(text.find("%8 = matmul(%7, %3) tile{weight_block_bytes=65536, chunk_bytes=4096} : f32[T, 64]  # blk.0.ffn_gate") !=
        std::string::npos);
  CHECK(text.find("matmul_add(%10, %5, %6) tile{weight_block_bytes=65536, chunk_bytes=4096}") != std::string::npos);
  auto back = parse(text);
  REQUIRE(back.has_value());
  CHECK(print(*back) == text);

  // Without measured roofs the cost rule is skipped: the default chunk.
  DeviceInfo no_roofs = d;
  no_roofs.roofs = {};
  ctx.device = &no_roofs;
  CHECK(after(kFuseGateUp_before, "tile", ctx).find("tile{weight_block_bytes=65536, chunk_bytes=65536}") != std::string::npos);

  auto overrides = parse_tile_overrides("matmul.chunk_bytes=8192,*.weight_block_bytes=32768");
  REQUIRE(overrides.has_value());
  ctx.tile_overrides = *overrides;
  const std::string over = after(kFuseMatmulResidual_before, "fuse_matmul_residual,tile", ctx);
  CHECK(over.find("%8 = matmul(%7, %3) tile{weight_block_bytes=32768, chunk_bytes=8192}") != std::string::npos);
  CHECK(over.find("matmul_add(%10, %5, %6) tile{weight_block_bytes=32768, chunk_bytes=65536}") != std::string::npos);
  auto bad = parse_tile_overrides("matmul.rows=4");
  REQUIRE(!bad.has_value());
  CHECK(bad.status().message().find("--tile: 'matmul.rows=4': no tile field 'rows'") == 0);
}

TEST_CASE("docs/ir.md shows each pass's golden before and after text") {
  std::ifstream f(std::string(TESSERA_SOURCE_DIR) + "/docs/ir.md", std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  for (const char* text : {kDce_before, kDce_after, kFuseQkv_before, kFuseQkv_after, kFuseGateUp_after, kFuseMatmulResidual_after,
                           kFuseRopeKvAppend_before, kFuseRopeKvAppend_after, kFuseResidualNorm_before,
                           kFuseResidualNorm_after})
    CHECK_MESSAGE(doc.find("```\n" + std::string(text) + "```") != std::string::npos, text);
}

TEST_CASE("fuse_residual_norm gives the residual sum and its RMSNorm one node, after an add or a matmul_add") {
  CHECK(after(kFuseResidualNorm_before, "fuse_matmul_residual,fuse_residual_norm") == kFuseResidualNorm_after);
}
