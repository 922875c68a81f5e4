// The IR, its printer, memory planning and lowering, on small graphs.
#include <doctest/doctest.h>

#include "engine/bench/synthetic_model.h"
#include "engine/runtime/model_graph.h"
#include "graph/builder.h"
#include "graph/lower.h"
#include "graph/memory_plan.h"
#include "graph/printer.h"
#include "core/thread_pool.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

// x -> rms_norm -> matmul -> add(x) : the smallest residual block.
Graph residual_block() {
  GraphBuilder b("block");
  const ValueId ids = b.step_input(StepField::token_ids, RowCount::tokens);
  const ValueId emb = b.weight("token_embd.weight", TensorDesc::contiguous(DType::f32, Shape{16, 8}));
  const ValueId norm_w = b.weight("norm.weight", TensorDesc::contiguous(DType::f32, Shape{8}));
  const ValueId w = b.weight("w.weight", TensorDesc::contiguous(DType::q8_0, Shape{8, 32}));
  (void)w;
  const ValueId w2 = b.weight("w2.weight", TensorDesc::contiguous(DType::f32, Shape{8, 8}));
  const ValueId x = b.embedding(emb, ids, "embd");
  const ValueId h = b.rms_norm(x, norm_w, {1e-5f}, "norm");
  const ValueId y = b.matmul(h, w2, "proj");
  b.mark_output(b.add(x, y, "residual"));
  auto g = b.finish();
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  return std::move(*g);
}

TransformerConfig tiny_config() {
  TransformerConfig c;
  c.dim = 64;
  c.hidden_dim = 96;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 64;
  c.context_length = 64;
  c.rope_dims = 16;
  return c;
}

}  // namespace

TEST_CASE("the printer shows every node with its params, symbolic rows and label") {
  const std::string text = print(residual_block());
  CHECK(text.find("graph @block {") == 0);
  CHECK(text.find("= rms_norm(%") != std::string::npos);
  CHECK(text.find("{eps=1e-05} : f32[T, 8]  # norm") != std::string::npos);
  CHECK(text.find("input \"token_ids\" : i32[T]") != std::string::npos);
  CHECK(text.find("weight \"w2.weight\" : f32[8, 8]") != std::string::npos);
  CHECK(text.find("return %") != std::string::npos);
}

TEST_CASE("a shape mismatch is an error naming the node") {
  GraphBuilder b("bad");
  const ValueId ids = b.step_input(StepField::token_ids, RowCount::tokens);
  const ValueId emb = b.weight("e", TensorDesc::contiguous(DType::f32, Shape{16, 8}));
  const ValueId w = b.weight("w", TensorDesc::contiguous(DType::f32, Shape{4, 9}));
  b.mark_output(b.matmul(b.embedding(emb, ids, "embd"), w, "blk.0.attn_q"));
  auto g = b.finish();
  REQUIRE(!g.has_value());
  CHECK(g.status().message().find("blk.0.attn_q") != std::string::npos);
  CHECK(g.status().message().find("K") != std::string::npos);
}

TEST_CASE("lowering sizes every buffer for the bucket and plans activations without overlap") {
  const Graph g = residual_block();
  for (int32_t tokens : {1, 7, 64}) {
    CAPTURE(tokens);
    auto plan = lower(g, ShapeBucket{tokens, 1, tokens, 1});
    REQUIRE(plan.has_value());
    CHECK(plan->dispatches.size() == g.nodes.size());
    CHECK(plan->buffers[0].role == BufferRole::arena);
    // embedding, rms_norm, matmul, add over [T, 8] f32: at most three live at once
    CHECK(plan->arena_lower_bound_bytes >= (uint64_t)tokens * 8 * 4 * 2);
    CHECK(plan->arena_peak_bytes >= plan->arena_lower_bound_bytes);
    CHECK(plan->arena_peak_bytes <= plan->buffers[0].bytes);
    for (const auto& d : plan->dispatches)
      for (const auto& t : d.outputs)
        if (t.buffer == 0) CHECK(t.offset + t.desc.bytes() <= plan->buffers[0].bytes);
    for (const auto& b : plan->buffers)
      if (b.role == BufferRole::step_input) CHECK(b.bytes == (uint64_t)tokens * 4);
  }
}

TEST_CASE("the memory plan of a llama graph keeps live values apart and stays near the lower bound") {
  ThreadPool pool(1);
  SyntheticSpec spec;
  spec.config = tiny_config();
  spec.weight_type = DType::q8_0;
  auto w = make_synthetic_llama(spec, pool);
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  auto g = build_model_graph(*w, KvLayout{8, 16});
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  std::vector<uint64_t> bytes(g->values.size());
  for (size_t i = 0; i < g->values.size(); ++i) {
    TensorDesc d = g->values[i].desc;
    if (g->values[i].rows != RowCount::fixed) d.shape[0] = 32;
    bytes[i] = TensorDesc::contiguous(d.dtype, d.shape).bytes();
  }
  const MemoryPlan mp = plan_memory(*g, bytes);
  CHECK(verify_memory_plan(*g, mp).is_ok());
  CHECK(mp.peak_bytes >= mp.lower_bound_bytes);
  MESSAGE("peak " << mp.peak_bytes << " B, lower bound " << mp.lower_bound_bytes << " B");
  CHECK(mp.peak_bytes <= mp.lower_bound_bytes * 2);
  // Every layer's weights and pools appear once; the output is the logits.
  CHECK(g->value(g->outputs[0]).desc.shape.last() == spec.config.vocab_size);
}

TEST_CASE("verify_memory_plan catches two live values at the same offset") {
  const Graph g = residual_block();
  std::vector<uint64_t> bytes(g.values.size(), 256);
  MemoryPlan mp = plan_memory(g, bytes);
  REQUIRE(verify_memory_plan(g, mp).is_ok());
  // Force the embedding output (live until the residual add) onto the matmul output.
  const ValueId x = g.nodes[0].outputs[0], y = g.nodes[2].outputs[0];
  mp.values[(size_t)y].offset = mp.values[(size_t)x].offset;
  CHECK(!verify_memory_plan(g, mp).is_ok());
}
