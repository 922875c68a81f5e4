// Tensor parallelism without mpirun: two ranks as threads of this process
// (tests/support/thread_group.h), rank 0 a Model like any other and rank 1
// following it (follow_leader), so these run under the sanitizers too. The
// split model is held to what the whole one is held to: llama.cpp's logits
// on every zoo file within the file's bound, teacher-forced and one token a
// step, its exact greedy ids for the f32 files; run.c's ids for stories260K.
// tests/cli/tensor_parallel_cli_test.cpp runs the same over MPI (mpirun).
#include <doctest/doctest.h>

#include <thread>

#include "engine/api/model_impl.h"
#include "graph/printer.h"
#include "support/two_ranks.h"
#include "support/zoo_reference.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// The bytes of every weight some node of g reads, each once: what the rank holds.
uint64_t held_weight_bytes(const graph::Graph& g) {
  std::vector<bool> seen(g.values.size());
  uint64_t total = 0;
  for (const auto& n : g.nodes)
    for (graph::ValueId in : n.inputs)
      if (in >= 0 && g.value(in).kind == graph::ValueKind::weight && !seen[(size_t)in]) {
        seen[(size_t)in] = true;
        total += g.value(in).desc.bytes();
      }
  return total;
}

size_t count_ops(const graph::Graph& g, OpKind op) {
  return (size_t)std::count_if(g.nodes.begin(), g.nodes.end(), [&](const graph::Node& n) { return n.op == op; });
}

}  // namespace

TEST_CASE("tensor parallel: every zoo file split over 2 ranks matches llama.cpp's logits within its bound, and gives its exact greedy ids where the whole model does") {
  TwoRanks ranks;
  for (ZooFile z : zoo_files()) {
    CAPTURE(z.name);
    // A file in 256-column blocks (the K-quants, iq4_xs) has its attention
    // output held as f32 on each rank (128 of its 256 columns are not whole
    // blocks): those products skip the 8-bit activations llama.cpp's (and the
    // whole model's) dot uses, which moves near-tied rows' argmax; the NMSE
    // bound stays the file's. Measured: Q5_K_M-pure 30 of 34 rows where the
    // whole model agrees on 32.
    if (z.name.find("_K") != std::string::npos || z.name.find("IQ4_XS") != std::string::npos) z.min_argmax_share -= 0.05;
    auto m = ranks.open(shared_path("models/zoo/" + z.name + ".gguf"));
    check_zoo_file(z, *m, "cpu, 2 ranks", {.token_by_token = true});
  }
}

TEST_CASE("tensor parallel: stories260K split over 2 ranks gives run.c's greedy ids") {
  TwoRanks ranks;
  auto m = ranks.open(shared_path("models/stories260K.bin"), 512);
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 6);
  for (const auto& c : cases) {
    CAPTURE(c.prompt_ids);
    const std::vector<int32_t> prompt = parse_ids(c.prompt_ids);
    const auto ids = free_running_greedy(*m, prompt, c.full_ids.size() - prompt.size());
    CHECK(join_ids(ids) == join_ids(c.full_ids));
  }
}

TEST_CASE("tensor parallel: each rank's graph has its half of the heads, KV and weights, an all_reduce after every row-parallel projection and an all_gather after the classifier") {
  TwoRanks ranks;
  const std::string path = shared_path("models/zoo/q-llama-Q4_K_M-pure.gguf");
  auto whole = open_zoo_model("q-llama-Q4_K_M-pure", "cpu", "default");
  auto split = ranks.open(path);
  const graph::Graph& g = split->impl().runner->graph();
  const std::string ir = graph::print(g);
  size_t reduces = 0, gathers = 0;
  for (const auto& n : g.nodes) {
    reduces += n.op == OpKind::all_reduce;
    gathers += n.op == OpKind::all_gather;
  }
  const int32_t layers = split->impl().weights->config.n_layers;
  CHECK(reduces == (size_t)(2 * layers));  // attention output and FFN down, each layer
  CHECK(gathers == 1);
  CHECK(ir.find("all_reduce") != std::string::npos);
  CHECK(ir.find("all_gather(") != std::string::npos);
  CHECK(ir.find("{total=512, world=2}") != std::string::npos);
  // q4_K's 256-column blocks do not split at 128 columns: attn_output is held widened, and says so.
  CHECK(ir.find("shard=cols 0/2 widened") != std::string::npos);
  CHECK(ir.find("shard=rows 0/2") != std::string::npos);
  bool noted = false, whole_table = false;
  for (const auto& line : split->impl().runner->placement_notes()) {
    noted |= line.find("held as f32 on each rank") != std::string::npos;
    // Its 256-wide table's 128 columns are not whole q4_K blocks either: the embedding stays whole, and says so.
    whole_table |= line.find("token_embd.weight (q4_K, 256 columns) is whole on each rank") != std::string::npos;
  }
  CHECK(noted);
  CHECK(whole_table);
  // Each rank's KV pools hold half the KV heads.
  CHECK(split->impl().kv->pools()[0].block_bytes * 2 == whole->impl().kv->pools()[0].block_bytes);
  // The row-parallel weights in whole blocks and every column-parallel one are half of the whole model's.
  CHECK(split->impl().runner->weight_bytes_per_token() < whole->impl().runner->weight_bytes_per_token());
}

TEST_CASE("tensor parallel: a split the model's shape does not allow is refused in one line naming the flag and the layer") {
  // stories260K has 8 heads and 4 KV heads: 3 ranks divide neither.
  auto w = open_weights(shared_path("models/stories260K.bin"));
  REQUIRE(w.has_value());
  auto g = build_model_graph(*w, KvLayout{8, 16, DType::f32});
  REQUIRE(g.has_value());
  graph::PassContext ctx;
  ctx.tp_rank = 1;
  ctx.tp_size = 3;
  const Status st = graph::run_passes(*g, "tensor_parallel", ctx);
  REQUIRE_FALSE(st.is_ok());
  CHECK(st.message().find("--tensor-parallel 3 (rank 1): blk.0.") != std::string::npos);
  CHECK(st.message().find("does not divide among 3 ranks") != std::string::npos);
}

// stories260K (f32, a 64-wide table shared with the classifier): the
// embedding looks up each rank's 32 columns and an all_gather joins them,
// the classifier scores each rank's half of the vocabulary from a range cut
// from the same table, and every other weight but the norms is halved.
TEST_CASE("tensor parallel: the embedding table is split by columns and all_gathered, so a rank holds about half the weights") {
  TwoRanks ranks;
  ModelOptions o;
  o.path = shared_path("models/stories260K.bin");
  o.max_context = 64;
  auto whole = Model::open(o);
  REQUIRE_MESSAGE(whole.has_value(), whole.status().message());
  auto split = ranks.open(shared_path("models/stories260K.bin"));
  const graph::Graph& g = split->impl().runner->graph();
  CHECK(count_ops(g, OpKind::all_gather) == 2);  // the embedding's and the classifier's
  const std::string ir = graph::print(g);
  CHECK(ir.find("{total=64, world=2}") != std::string::npos);
  CHECK(ir.find("{total=512, world=2}") != std::string::npos);
  for (const auto& n : g.nodes)
    if (n.op == OpKind::embedding) CHECK(g.value(n.inputs[0]).desc.shape[1] == 32);
  for (const auto& line : split->impl().runner->placement_notes()) CHECK(line.find("whole on each rank") == std::string::npos);
  // Whole: the table once (tied) and the layers. Split: half of the table's
  // columns, half its rows for the classifier, half of every layer's matmuls.
  const uint64_t whole_bytes = held_weight_bytes((*whole)->impl().runner->graph()), split_bytes = held_weight_bytes(g);
  MESSAGE("weights held: whole " << whole_bytes << " B, a rank of 2 " << split_bytes << " B");
  CHECK(split_bytes < whole_bytes * 6 / 10);
}
