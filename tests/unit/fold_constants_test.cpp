// fold_constants and the constant value kind on small hand-written IR: the
// text before, the pass, the golden text after; the recipe printed and read
// back; the verifier and the shape rules refusing a table that does not fit.
#include <doctest/doctest.h>

#include "core/thread_pool.h"
#include "engine/bench/synthetic_model.h"
#include "engine/runtime/model_graph.h"
#include "graph/constants.h"
#include "graph/parser.h"
#include "graph/pass_manager.h"
#include "graph/printer.h"
#include "graph/verifier.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

PassContext with_positions(int32_t positions, const KernelTable* kernels = nullptr) {
  PassContext ctx;
  ctx.kernels = kernels;
  ctx.max_positions = positions;
  return ctx;
}

std::string after(const std::string& text, const std::string& pipeline, const PassContext& ctx) {
  auto g = parse(text, "test.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  REQUIRE_MESSAGE(verify(*g).is_ok(), verify(*g).message());
  const Status s = run_passes(*g, pipeline, ctx);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  const std::string text_after = print(*g);
  auto back = parse(text_after, "after.ir");
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(print(*back) == text_after);
  return text_after;
}

// Like the Vulkan backend: runs rope, but not from a folded table.
class NoTableKernels : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override {
    if (q.rope_table) return {false, "", "computes cos/sin itself"};
    return {true, "plain", ""};
  }
};

const char* const kPrologue = R"(graph @prologue {
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

const char* const kPrologue_folded = R"(graph @prologue {
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
  %18 = constant "rope_table.0" : f32[64, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=64}
  %10 = embedding(%6, %0) : f32[T, 32]  # q
  %11 = embedding(%7, %0) : f32[T, 16]  # k
  %12 = embedding(%7, %0) : f32[T, 16]  # v
  %13 = rope(%10, %1, %18) {heads=4, head_dim=8, rot_dims=8, theta=10000, layout=interleaved} : f32[T, 32]  # blk.0.rope_q
  %14 = rope(%11, %1, %18) {heads=2, head_dim=8, rot_dims=8, theta=10000, layout=interleaved} : f32[T, 16]  # blk.0.rope_k
  %15, %16 = kv_append(%14, %12, %2, %8, %9) {kv_heads=2, head_dim=8, block_size=16} : f32[64, 16], f32[64, 16]  # blk.0.kv_append
  %17 = paged_attention(%13, %15, %16, %1, %3, %4, %5) {heads=4, kv_heads=2, head_dim=8, block_size=16, scale=0.35355338, causal=true} : f32[T, 32]  # blk.0.attention
  return %17
}
)";

const char* const kPrologue_fused_folded = R"(graph @prologue {
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
  %17 = constant "rope_table.0" : f32[64, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=64}
  %10 = embedding(%6, %0) : f32[T, 32]  # q
  %11 = embedding(%7, %0) : f32[T, 16]  # k
  %12 = embedding(%7, %0) : f32[T, 16]  # v
  %13, %14, %15 = rope_kv_append(%10, %11, %12, %1, %2, %8, %9, %17) {heads=4, head_dim=8, rot_dims=8, theta=10000, layout=interleaved, kv_heads=2, block_size=16} : f32[T, 32], f32[64, 16], f32[64, 16]  # blk.0.rope_kv_append
  %16 = paged_attention(%13, %14, %15, %1, %3, %4, %5) {heads=4, kv_heads=2, head_dim=8, block_size=16, scale=0.35355338, causal=true} : f32[T, 32]  # blk.0.attention
  return %16
}
)";

// Two rotations (theta 10000 and 500000, printed in its shortest form 5e+05) over the same positions: one table each.
const char* const kTwoThetas = R"(graph @two {
  %0 = input "token_ids" : i32[T]
  %1 = input "positions" : i32[T]
  %2 = weight "emb" : f32[16, 32]
  %3 = embedding(%2, %0) : f32[T, 32]  # x
  %4 = rope(%3, %1) {heads=4, head_dim=8, rot_dims=8, theta=10000, layout=interleaved} : f32[T, 32]  # a
  %5 = rope(%4, %1) {heads=4, head_dim=8, rot_dims=8, theta=500000, layout=half_split} : f32[T, 32]  # b
  %6 = rope(%5, %1) {heads=2, head_dim=16, rot_dims=8, theta=10000, layout=half_split} : f32[T, 32]  # c
  return %6
}
)";

const char* const kTwoThetas_folded = R"(graph @two {
  %0 = input "token_ids" : i32[T]
  %1 = input "positions" : i32[T]
  %2 = weight "emb" : f32[16, 32]
  %7 = constant "rope_table.0" : f32[128, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=128}
  %8 = constant "rope_table.1" : f32[128, 4, 2] {recipe=rope_table, rot_dims=8, theta=5e+05, positions=128}
  %3 = embedding(%2, %0) : f32[T, 32]  # x
  %4 = rope(%3, %1, %7) {heads=4, head_dim=8, rot_dims=8, theta=10000, layout=interleaved} : f32[T, 32]  # a
  %5 = rope(%4, %1, %8) {heads=4, head_dim=8, rot_dims=8, theta=5e+05, layout=half_split} : f32[T, 32]  # b
  %6 = rope(%5, %1, %7) {heads=2, head_dim=16, rot_dims=8, theta=10000, layout=half_split} : f32[T, 32]  # c
  return %6
}
)";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return s.replace(at, from.size(), to);
}

std::string verify_error(const std::string& text) {
  auto g = parse(text, "bad.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  const Status s = verify(*g);
  REQUIRE(!s.is_ok());
  return s.message();
}

std::string parse_error(const std::string& text) {
  auto g = parse(text, "bad.ir");
  REQUIRE(!g.has_value());
  return g.status().message();
}

}  // namespace

TEST_CASE("fold_constants gives both ropes one shared cos/sin table") {
  CHECK(after(kPrologue, "fold_constants", with_positions(64)) == kPrologue_folded);
}

TEST_CASE("fold_constants after fuse_rope_kv_append, or before it, gives the fused node the table") {
  CHECK(after(kPrologue, "fuse_rope_kv_append,fold_constants,dce", with_positions(64)) == kPrologue_fused_folded);
  CHECK(after(kPrologue, "fold_constants,fuse_rope_kv_append,dce", with_positions(64)) == kPrologue_fused_folded);
}

TEST_CASE("fold_constants makes one table per distinct rotation, layout and heads share one") {
  CHECK(after(kTwoThetas, "fold_constants", with_positions(128)) == kTwoThetas_folded);
}

TEST_CASE("fold_constants does nothing without max positions, or on a target that computes cos/sin itself") {
  auto g = parse(kPrologue);
  REQUIRE(g.has_value());
  CHECK(after(kPrologue, "fold_constants", with_positions(0)) == print(*g));
  NoTableKernels no_table;
  CHECK(after(kPrologue, "fold_constants", with_positions(64, &no_table)) == print(*g));
  // Run twice, the second finds every rope already folded.
  CHECK(after(kPrologue_folded, "fold_constants", with_positions(64)) == kPrologue_folded);
}

TEST_CASE("the verifier refuses a constant whose type is not what its recipe makes") {
  CHECK(verify_error(replaced(kPrologue_folded, "f32[64, 4, 2] {recipe", "f32[64, 8, 2] {recipe"))
            .find("constant 'rope_table.0': declared f32[64, 8, 2]; its recipe rope_table makes f32[64, 4, 2]") != std::string::npos);
  CHECK(verify_error(replaced(kPrologue_folded, "rot_dims=8, theta=10000, positions=64", "rot_dims=7, theta=10000, positions=64"))
            .find("rot_dims 7; expected an even number > 0") != std::string::npos);
  CHECK(verify_error(replaced(kPrologue_folded, "f32[64, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=64}",
                              "f32[0, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=0}"))
            .find("positions 0; expected > 0") != std::string::npos);
}

TEST_CASE("a rope's table must be a rope_table constant made for its rot_dims and theta") {
  // A table for another theta: the node would rotate by the wrong angles.
  const std::string other_theta = replaced(kPrologue_folded, "theta=10000, positions=64", "theta=500000, positions=64");
  CHECK(verify_error(other_theta).find("blk.0.rope_q: rope: table 'rope_table.0' is for rot_dims=8, theta=5e+05; the node rotates rot_dims=8, theta=10000") != std::string::npos);
  // A weight in the table's place.
  const std::string weight_table = replaced(kPrologue_folded, "%18 = constant \"rope_table.0\" : f32[64, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=64}",
                                            "%18 = weight \"cos_sin\" : f32[64, 4, 2]");
  CHECK(verify_error(weight_table).find("rope: the extra input must be a rope_table constant or frequency factors f32[4] (rot_dims / 2), got a weight f32[64, 4, 2]") != std::string::npos);
  // Four inputs are not a rope.
  const std::string four = replaced(kPrologue_folded, "rope(%10, %1, %18)", "rope(%10, %1, %18, %18)");
  CHECK(verify_error(four).find("rope: expects 2 inputs (x, positions) or 3 (x, positions, and a table or frequency factors), got 4") != std::string::npos);
}

TEST_CASE("parse errors name a constant's missing or unknown recipe") {
  CHECK(parse_error(replaced(kPrologue_folded, " {recipe=rope_table, rot_dims=8, theta=10000, positions=64}", ""))
            .find("bad.ir:12: expected attribute 'recipe'") == 0);
  CHECK(parse_error(replaced(kPrologue_folded, "recipe=rope_table", "recipe=sin_table")).find("expected recipe=rope_table") != std::string::npos);
  CHECK(parse_error(replaced(kPrologue_folded, "positions=64}", "positions=64, scale=2}")).find("no attribute 'scale'") != std::string::npos);
  CHECK(parse_error(replaced(kPrologue_folded, ", positions=64}", "}")).find("expected attribute 'positions'") != std::string::npos);
}

TEST_CASE("materialize_constant makes the recipe's bytes and refuses a constant that does not fit it") {
  auto g = parse(kPrologue_folded);
  REQUIRE(g.has_value());
  const Value& table = g->value(18);
  auto bytes = materialize_constant(table);
  REQUIRE_MESSAGE(bytes.has_value(), bytes.status().message());
  CHECK(bytes->size() == 64 * 4 * 2 * sizeof(float));
  // Position 0 is no rotation: cos 1, sin 0 for every pair.
  const float* cs = reinterpret_cast<const float*>(bytes->data());
  for (int i = 0; i < 4; ++i) {
    CHECK(cs[2 * i] == 1.0f);
    CHECK(cs[2 * i + 1] == 0.0f);
  }
  Value wrong = table;
  wrong.desc = TensorDesc::contiguous(DType::f32, Shape{32, 4, 2});
  auto refused = materialize_constant(wrong);
  REQUIRE(!refused.has_value());
  CHECK(refused.status().message().find("declared f32[32, 4, 2]") != std::string::npos);
}

TEST_CASE("a llama graph after the default passes with max positions: one table for every layer, and it round-trips") {
  ThreadPool pool(1);
  SyntheticSpec spec;
  spec.config.dim = 64;
  spec.config.hidden_dim = 96;
  spec.config.n_layers = 3;
  spec.config.n_heads = 4;
  spec.config.n_kv_heads = 2;
  spec.config.vocab_size = 64;
  spec.config.context_length = 64;
  spec.config.rope_dims = 16;
  auto w = make_synthetic_llama(spec, pool);
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  auto g = build_model_graph(*w, KvLayout{4, 16});
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  REQUIRE(run_passes(*g, "default", with_positions(64)).is_ok());
  int constants = 0, with_table = 0;
  for (const Value& v : g->values) constants += v.kind == ValueKind::constant;
  for (const Node& n : g->nodes) with_table += n.op == OpKind::rope_kv_append && n.inputs.size() == 8;
  CHECK(constants == 1);
  CHECK(with_table == 3);
  const std::string text = print(*g);
  CHECK(text.find("constant \"rope_table.0\" : f32[64, 8, 2] {recipe=rope_table, rot_dims=16, theta=10000, positions=64}") !=
        std::string::npos);
  auto back = parse(text, "roundtrip.ir");
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(print(*back) == text);
  CHECK(verify(*back).is_ok());
}
