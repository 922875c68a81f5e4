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
#include "support/thread_group.h"
#include "support/zoo_reference.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// Rank 1 on a thread, following rank 0 until the group goes.
class TwoRanks {
 public:
  TwoRanks() : world_(std::make_shared<ThreadWorld>(2)), data_(std::make_shared<ThreadWorld>(2)) {
    follower_ = std::thread([this] {
      follower_status_ = follow_leader({std::make_shared<ThreadGroup>(world_, 1), std::make_shared<ThreadCommunicator>(data_, 1)});
    });
  }
  ~TwoRanks() {
    (void)send_control(*leader_group_, ControlKind::leave);
    follower_.join();
  }
  // A model split over the two ranks, opened on rank 0.
  std::unique_ptr<Model> open(const std::string& path, int32_t ctx = 64) {
    ModelOptions o;
    o.path = path;
    o.max_context = ctx;
    o.tensor_parallel = 2;
    RunnerOptions ro = runner_options(o);
    ro.parallel.group = leader_group_;
    ro.parallel.host_comm = std::make_shared<ThreadCommunicator>(data_, 0);
    auto m = open_model(o, ro);
    REQUIRE_MESSAGE(m.has_value(), m.status().message());
    return std::move(*m);
  }
  const Status& follower_status() const { return follower_status_; }

 private:
  std::shared_ptr<ThreadWorld> world_, data_;
  std::shared_ptr<HostGroup> leader_group_ = std::make_shared<ThreadGroup>(world_, 0);
  std::thread follower_;
  Status follower_status_;
};

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
  bool noted = false;
  for (const auto& line : split->impl().runner->placement_notes()) noted |= line.find("held as f32 on each rank") != std::string::npos;
  CHECK(noted);
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
