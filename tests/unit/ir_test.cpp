// The textual IR both ways and the verifier: every graph the project builds
// prints, parses back and prints the same; bad text is an error naming the
// line; the verifier refuses graphs that break SSA, shapes or aliasing.
#include <doctest/doctest.h>

#include "core/thread_pool.h"
#include "engine/bench/synthetic_model.h"
#include "engine/models/load_model.h"
#include "engine/runtime/model_graph.h"
#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "graph/parser.h"
#include "graph/pass_manager.h"
#include "graph/passes/passes.h"
#include "graph/printer.h"
#include "graph/verifier.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

Graph tiny_llama(DType weights, int32_t n_heads, int32_t n_kv_heads) {
  ThreadPool pool(1);
  SyntheticSpec spec;
  spec.config.dim = 64;
  spec.config.hidden_dim = 96;
  spec.config.n_layers = 2;
  spec.config.n_heads = n_heads;
  spec.config.n_kv_heads = n_kv_heads;
  spec.config.vocab_size = 64;
  spec.config.context_length = 64;
  spec.config.rope_dims = 64 / n_heads;
  spec.weight_type = weights;
  auto w = make_synthetic_llama(spec, pool);
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  auto g = build_model_graph(*w, KvLayout{4, 16});
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  return std::move(*g);
}

void check_round_trip(const Graph& g) {
  const std::string text = print(g);
  auto back = parse(text, "roundtrip.ir");
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(print(*back) == text);
  const Status v = verify(*back);
  CHECK_MESSAGE(v.is_ok(), v.message());
}

const char* const kSmall = R"(graph @small {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 8]
  %2 = embedding(%1, %0) : f32[T, 8]  # embd
  return %2
}
)";

std::string parse_error(const std::string& text) {
  auto g = parse(text, "bad.ir");
  REQUIRE(!g.has_value());
  return g.status().message();
}

std::string verify_error(const std::string& text) {
  auto g = parse(text, "bad.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  const Status s = verify(*g);
  REQUIRE(!s.is_ok());
  return s.message();
}

}  // namespace

TEST_CASE("print(parse(print(g))) == print(g) for llama graphs, unfused and after every pass") {
  for (DType t : {DType::q8_0, DType::f32}) {
    for (auto [h, kv] : {std::pair{4, 2}, std::pair{4, 4}}) {
      CAPTURE(name(t));
      CAPTURE(kv);
      Graph g = tiny_llama(t, h, kv);
      CHECK(verify(g).is_ok());
      check_round_trip(g);
      for (const PassInfo& p : registered_passes()) {
        CAPTURE(p.name);
        REQUIRE(p.run(g, PassContext{}).is_ok());
        const Status v = verify(g);
        REQUIRE_MESSAGE(v.is_ok(), v.message());
        check_round_trip(g);
      }
    }
  }
}

namespace {

std::string zoo_path(const std::string& name) { return std::string(TESSERA_SHARED_DIR) + "/models/zoo/" + name + ".gguf"; }

ModelWeights zoo_weights(const std::string& name) {
  auto w = load_model(zoo_path(name));
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  return std::move(*w);
}

// The llama zoo file as a llama 3.x with Mistral's window would be: llama3
// frequency factors (rope_freqs.weight), linear position scaling, a sliding window.
ModelWeights llama3_variant() {
  static const std::vector<float> factors = {1, 1, 1, 1, 1.5f, 2, 4, 6, 8, 8, 8, 8, 8, 8, 8, 8};
  ModelWeights w = zoo_weights("llama-f32");
  REQUIRE(w.config.rope_dims / 2 == (int32_t)factors.size());
  w.config.rope_freq_factors = true;
  w.config.rope_freq_scale = 0.5f;
  w.config.sliding_window = 16;
  w.tensors.push_back({"rope_freqs.weight", TensorDesc::contiguous(DType::f32, Shape{(int64_t)factors.size()}),
                       std::as_bytes(std::span<const float>(factors))});
  return w;
}

size_t count_op(const Graph& g, OpKind op) {
  size_t n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

}  // namespace

TEST_CASE("print(parse(print(g))) == print(g) for every architecture's graph, unfused and after every pass") {
  struct Arch {
    std::string name;
    ModelWeights weights;
  };
  std::vector<Arch> archs;
  for (const char* n : {"llama-f32", "qwen2-f32", "qwen3-f32", "gemma2-f32", "phi3-f32"}) archs.push_back({n, zoo_weights(n)});
  archs.push_back({"llama3 variant", llama3_variant()});
  for (const Arch& a : archs) {
    CAPTURE(a.name);
    auto built = build_model_graph(a.weights, KvLayout{4, 16});
    REQUIRE_MESSAGE(built.has_value(), built.status().message());
    const Graph unfused = *built;
    CHECK(verify(unfused).is_ok());
    check_round_trip(unfused);
    // What each architecture adds to llama's ops, in the graph and its text.
    const std::string text = print(unfused);
    if (a.name == "qwen2-f32") CHECK(count_op(unfused, OpKind::bias_add) == 3 * 2);
    if (a.name == "qwen3-f32") CHECK(count_op(unfused, OpKind::head_rms_norm) == 2 * 2);
    if (a.name == "gemma2-f32") {
      CHECK(count_op(unfused, OpKind::scale) == 1);
      CHECK(count_op(unfused, OpKind::softcap) == 1);
      CHECK(count_op(unfused, OpKind::gelu_mul) == 2);
      CHECK(count_op(unfused, OpKind::rms_norm) == 2 * 4 + 1);
      CHECK(text.find("window=64, softcap=50}") != std::string::npos);  // layer 0
      CHECK(text.find("causal=true, softcap=50}") != std::string::npos);  // layer 1: no window
    }
    if (a.name == "phi3-f32") {
      CHECK(count_op(unfused, OpKind::matmul_qkv) == 2);
      CHECK(count_op(unfused, OpKind::matmul_silu_mul) == 2);
    }
    if (a.name == "llama3 variant") {
      CHECK(text.find("freq_scale=0.5}") != std::string::npos);
      CHECK(text.find("weight \"rope_freqs.weight\" : f32[16]") != std::string::npos);
      CHECK(text.find("window=16}") != std::string::npos);
    }
    // Every pass alone on the unfused graph, then all of them in order (with
    // the context's positions, so fold_constants folds), each printing back.
    for (bool chained : {false, true}) {
      Graph g = unfused;
      PassContext ctx;
      ctx.max_positions = 64;
      for (const PassInfo& p : registered_passes()) {
        CAPTURE(chained);
        CAPTURE(p.name);
        if (!chained) g = unfused;
        REQUIRE(p.run(g, ctx).is_ok());
        const Status v = verify(g);
        REQUIRE_MESSAGE(v.is_ok(), v.message());
        check_round_trip(g);
      }
      if (chained && a.name == "llama3 variant") {
        // The factors ride into rope_kv_append; no folded table (its recipe knows neither factors nor scale).
        CHECK(count_op(g, OpKind::rope_kv_append) == 2);
        for (const Value& v : g.values) CHECK(!v.rope_table);
      }
    }
  }
}

// Unfused: 16 nodes a layer plus embedding, gather, norm and classifier.
// Fused: qkv, rope_kv_append, attention, two matmul_add_rms_norm (the last
// layer's second is a matmul_add: a gather sits between it and the norm) and
// matmul_silu_mul, 6 a layer, plus the first attn_norm.
TEST_CASE("the default pipeline cuts a llama layer from 16 nodes to 6") {
  Graph g = tiny_llama(DType::q8_0, 4, 2);
  const size_t before = g.nodes.size();
  REQUIRE(run_passes(g, "default", PassContext{}).is_ok());
  CHECK(before == 2 * 16 + 4);
  CHECK(g.nodes.size() == 2 * 6 + 5);
  size_t packed = 0;
  for (const Value& v : g.values) packed += !v.packed_from.empty();
  CHECK(packed == 4);  // qkv and gate+up per layer
}

TEST_CASE("floats print in their shortest exact form and read back to the same bits") {
  GraphBuilder b("floats");
  const ValueId ids = b.step_input(StepField::token_ids, RowCount::tokens);
  const ValueId emb = b.weight("emb", TensorDesc::contiguous(DType::f32, Shape{16, 8}));
  const ValueId w = b.weight("w", TensorDesc::contiguous(DType::f32, Shape{8}));
  b.mark_output(b.rms_norm(b.embedding(emb, ids, "e"), w, {1.0f / 3.0f}, "n"));
  auto g = b.finish();
  REQUIRE(g.has_value());
  auto back = parse(print(*g));
  REQUIRE(back.has_value());
  CHECK(std::get<RmsNormParams>(back->nodes[1].params).eps == 1.0f / 3.0f);
}

TEST_CASE("parse errors name the source, the line and what was expected") {
  CHECK(parse(kSmall).has_value());
  CHECK(parse_error("").find("bad.ir: expected 'graph @NAME {'") == 0);
  std::string bad_dtype = kSmall;
  bad_dtype.replace(bad_dtype.find("f32[16, 8]"), 3, "f33");
  CHECK(parse_error(bad_dtype).find("bad.ir:3: expected a dtype") == 0);
  std::string undefined = kSmall;
  undefined.replace(undefined.find("(%1, %0)"), 8, "(%1, %9)");
  CHECK(parse_error(undefined).find("input %9 is never defined") != std::string::npos);
  std::string twice = kSmall;
  twice.replace(twice.find("%2 = embedding"), 2, "%1");
  CHECK(parse_error(twice).find("bad.ir:4: expected %1 defined once (SSA)") == 0);
  std::string unknown_op = kSmall;
  unknown_op.replace(unknown_op.find("embedding("), 9, "embedder_");
  CHECK(parse_error(unknown_op).find("an op name") != std::string::npos);
  std::string bad_attr = kSmall;
  bad_attr.replace(bad_attr.find(" : f32[T, 8]"), 0, " {eps=1}");
  CHECK(parse_error(bad_attr).find("no attribute 'eps' on this op") != std::string::npos);
  std::string no_close = kSmall;
  no_close.resize(no_close.rfind('}'));
  CHECK(parse_error(no_close).find("expected the closing '}'") != std::string::npos);
}

TEST_CASE("the verifier refuses wrong shapes, use before definition and a missing alias") {
  std::string wrong_shape = kSmall;
  wrong_shape.replace(wrong_shape.find("f32[T, 8]"), 9, "f32[T, 9]");
  CHECK(verify_error(wrong_shape).find("embd: output %2 is f32[T, 9]; the shape rule of embedding gives f32[T, 8]") != std::string::npos);
  const std::string use_before_def = R"(graph @order {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 8]
  %2 = add(%3, %3) : f32[T, 8]  # early
  %3 = embedding(%1, %0) : f32[T, 8]  # embd
  return %2
}
)";
  CHECK(verify_error(use_before_def).find("early: reads %3 before any node defines it") != std::string::npos);
  // A kv_append into a weight instead of a pool.
  const std::string not_a_pool = R"(graph @alias {
  %0 = input "token_ids" : i32[T]
  %1 = input "slot_mapping" : i32[T]
  %2 = weight "emb" : f32[16, 16]
  %3 = weight "k_cache" : f32[64, 16]
  %4 = kv_pool "v_cache" : f32[64, 16]
  %5 = embedding(%2, %0) : f32[T, 16]  # x
  %6, %7 = kv_append(%5, %5, %1, %3, %4) {kv_heads=2, head_dim=8, block_size=16} : f32[64, 16], f32[64, 16]  # kv
  return %5
}
)";
  CHECK(verify_error(not_a_pool).find("which is not a KV pool") != std::string::npos);
}

TEST_CASE("shape inference repairs a value whose type a rewrite left stale") {
  auto g = parse(kSmall);
  REQUIRE(g.has_value());
  g->value(2).desc = TensorDesc::contiguous(DType::f32, Shape{1, 5});
  CHECK(!verify(*g).is_ok());
  REQUIRE(passes::shape_inference(*g, PassContext{}).is_ok());
  CHECK(verify(*g).is_ok());
  CHECK(print(*g) == kSmall);
}

// The lower bound counts what must coexist while each node runs. Unfused,
// first fit meets it; fused, the tiny model's QKV node needs a perfect
// packing of five values that first fit misses by one 128-byte row (1.125x).
// On the bench and test models the logits dominate and the ratio is 1.0
// (docs/performance.md).
TEST_CASE("the arena plan of a llama graph stays near the lower bound, fused or not") {
  for (const std::string pipeline : {"none", "default"}) {
    const double slack = pipeline == "none" ? 1.0 : 1.13;
    Graph g = tiny_llama(DType::q8_0, 4, 2);
    REQUIRE(run_passes(g, pipeline, PassContext{}).is_ok());
    for (int64_t rows : {1, 16, 128}) {
      CAPTURE(pipeline);
      CAPTURE(rows);
      std::vector<uint64_t> bytes(g.values.size());
      for (size_t i = 0; i < g.values.size(); ++i) {
        TensorDesc d = g.values[i].desc;
        if (g.values[i].rows != RowCount::fixed) d.shape[0] = rows;
        bytes[i] = TensorDesc::contiguous(d.dtype, d.shape).bytes();
      }
      const MemoryPlan mp = plan_memory(g, bytes);
      REQUIRE(verify_memory_plan(g, mp).is_ok());
      MESSAGE(pipeline << " rows " << rows << ": peak " << mp.peak_bytes << " B, lower bound " << mp.lower_bound_bytes << " B");
      CHECK(mp.peak_bytes >= mp.lower_bound_bytes);
      CHECK((double)mp.peak_bytes <= slack * (double)mp.lower_bound_bytes);
    }
  }
}
