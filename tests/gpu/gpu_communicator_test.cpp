// The CUDA and ROCm plugins' communicators (NCCL, RCCL) across this
// machine's GPUs: one rank per thread, device r for rank r, each rank's
// HostGroup an in-process channel (support/thread_group.h) where a
// deployment has MPI. Every rank runs a plan of an all_reduce and an
// all_gather node, as a tensor-parallel step does, through its executable
// (captured into the step's graph for a small bucket, launched one by one for
// a large one); the results are checked against sums and column splices the
// host computes from the same random inputs, which every rank draws for every
// rank from the printed seed. Without two devices, or in a plugin built
// without NCCL/RCCL, the cases are Skipped by name.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/hal/plan.h"
#include "gpu/gpu_requirements.h"
#include "support/thread_group.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// A plan of one all_reduce (x[T, D] -> arena) and one all_gather (this
// rank's columns [T, C_r] -> [T, total] in the arena after it).
struct CollectiveCase {
  int64_t d_model;
  int64_t gather_total;
  int32_t max_tokens;  // the bucket: at most kGraphMaxTokens (512) runs as a graph
  int32_t n_tokens;    // the step
};

Plan collective_plan(int rank, int world, const CollectiveCase& c) {
  const int64_t T = c.max_tokens, D = c.d_model, total = c.gather_total;
  const int64_t cols = shard_range(total, world, rank).size();
  Plan p;
  p.bucket = ShapeBucket{c.max_tokens, 1, 1, 1};
  p.buffers = {PlanBuffer{"x", BufferRole::transfer, (uint64_t)(T * D * 4)},
               PlanBuffer{"x_shard", BufferRole::transfer, (uint64_t)(T * cols * 4)},
               PlanBuffer{"arena", BufferRole::arena, (uint64_t)(T * D * 4 + T * total * 4)}};
  const PlanTensor x{0, 0, TensorDesc::contiguous(DType::f32, {T, D}), RowCount::tokens};
  const PlanTensor reduced{2, 0, TensorDesc::contiguous(DType::f32, {T, D}), RowCount::tokens};
  const PlanTensor shard{1, 0, TensorDesc::contiguous(DType::f32, {T, cols}), RowCount::tokens};
  const PlanTensor gathered{2, (uint64_t)(T * D * 4), TensorDesc::contiguous(DType::f32, {T, total}), RowCount::tokens};
  p.dispatches.push_back(Dispatch{OpKind::all_reduce, NoParams{}, {x}, {reduced}, "all_reduce.0", {}});
  p.dispatches.push_back(
      Dispatch{OpKind::all_gather, AllGatherParams{(int32_t)total, world}, {shard}, {gathered}, "all_gather.0", {}});
  return p;
}

// Rank r's inputs: the same on every rank that draws them (one seed per process).
std::vector<float> rank_x(int r, size_t case_index, size_t n) { return Rng(1000 + 16 * case_index + (uint64_t)r).floats(n); }
std::vector<float> rank_shard(int r, size_t case_index, size_t n) { return Rng(2000 + 16 * case_index + (uint64_t)r).floats(n); }

// One rank's whole run: its device, the communicator, every case. Returns
// what failed, empty when nothing did. A wrong result is recorded and the
// rank goes on, issuing the same collectives as the others; a failure that
// ends the rank early (compile) leaves the others waiting in NCCL until
// CTest's timeout, which is as loud as it gets.
std::string run_rank(Backend& backend, HostGroup& group, const std::string& library, const std::vector<CollectiveCase>& cases) {
  std::ostringstream failed;
  const int rank = group.rank(), world = group.size();
  auto opened = backend.open(rank);
  if (!opened.has_value()) return "rank " + std::to_string(rank) + ": open: " + opened.status().message();
  Device& device = **opened;
  // Before a communicator, the table refuses the collectives, saying why.
  const KernelChoice before = device.kernels().query(OpQuery{OpKind::all_reduce});
  if (before.supported || before.reason.find("communicator") == std::string::npos)
    failed << "rank " << rank << ": without a communicator all_reduce is '" << before.kernel << "' / '" << before.reason << "'\n";
  auto made = device.create_communicator(group);
  if (!made.has_value()) return failed.str() + "rank " + std::to_string(rank) + ": create_communicator: " + made.status().message();
  std::shared_ptr<Communicator> comm = *made;
  if (comm->rank() != rank || comm->size() != world || comm->name() != library)
    failed << "rank " << rank << ": the communicator says rank " << comm->rank() << " of " << comm->size() << ", '" << comm->name()
           << "'\n";
  if (Status s = device.use_communicator(comm); !s.is_ok()) return failed.str() + "use_communicator: " + s.message();
  for (OpKind op : {OpKind::all_reduce, OpKind::all_gather}) {
    const KernelChoice k = device.kernels().query(OpQuery{op});
    if (!k.supported || k.kernel != std::string(name(op)) + "_" + library)
      failed << "rank " << rank << ": " << name(op) << " is '" << k.kernel << "' / '" << k.reason << "'\n";
  }
  auto stream = device.create_stream();
  if (!stream.has_value()) return failed.str() + "create_stream: " + stream.status().message();

  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const CollectiveCase& c = cases[ci];
    const int64_t T = c.max_tokens, D = c.d_model, total = c.gather_total, n = c.n_tokens;
    const std::string where = "rank " + std::to_string(rank) + ", case " + std::to_string(ci) + " (D " + std::to_string(D) +
                              ", total " + std::to_string(total) + ", " + std::to_string(n) + " of " + std::to_string(T) + " tokens)";
    const Plan plan = collective_plan(rank, world, c);
    std::vector<std::vector<float>> xs, shards;
    for (int r = 0; r < world; ++r) {
      xs.push_back(rank_x(r, ci, (size_t)(T * D)));
      shards.push_back(rank_shard(r, ci, (size_t)(T * shard_range(total, world, r).size())));
    }
    auto x = device.allocate(plan.buffers[0].bytes, MemoryUse::activations);
    auto shard = device.allocate(plan.buffers[1].bytes, MemoryUse::activations);
    if (!x.has_value() || !shard.has_value()) return failed.str() + where + ": allocate failed";
    auto bytes_of = [](const std::vector<float>& v) { return std::span<const std::byte>((const std::byte*)v.data(), v.size() * 4); };
    Status up = (*stream)->upload(**x, 0, bytes_of(xs[(size_t)rank]));
    if (up.is_ok()) up = (*stream)->upload(**shard, 0, bytes_of(shards[(size_t)rank]));
    if (!up.is_ok()) failed << where << ": upload: " << up.message() << "\n";
    std::vector<Buffer*> bound = {x->get(), shard->get(), nullptr};
    auto exe = device.compile(plan, bound);
    if (!exe.has_value()) return failed.str() + where + ": compile: " + exe.status().message();

    // The oracle: the sum over ranks, and each row's columns from their owners.
    std::vector<float> want_sum((size_t)(n * D)), want_gather((size_t)(n * total));
    for (int64_t i = 0; i < n * D; ++i) {
      double s = 0;
      for (int r = 0; r < world; ++r) s += xs[(size_t)r][(size_t)i];
      want_sum[(size_t)i] = (float)s;
    }
    for (int r = 0; r < world; ++r) {
      const ShardRange part = shard_range(total, world, r);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t j = 0; j < part.size(); ++j)
          want_gather[(size_t)(t * total + part.begin + j)] = shards[(size_t)r][(size_t)(t * part.size() + j)];
    }

    std::vector<int32_t> token_ids((size_t)n, 0), positions((size_t)n), slots((size_t)n, -1);
    for (int32_t t = 0; t < n; ++t) positions[(size_t)t] = t;
    const int32_t query_start[2] = {0, (int32_t)n}, seq_lens[1] = {(int32_t)n}, block_tables[1] = {0};
    StepArgs args;
    args.token_ids = token_ids.data();
    args.positions = positions.data();
    args.slot_mapping = slots.data();
    args.n_tokens = (int32_t)n;
    args.query_start = query_start;
    args.seq_lens = seq_lens;
    args.block_tables = block_tables;
    args.n_seqs = 1;
    // Twice: a graph is captured on the first step and replayed on the second.
    for (int step = 0; step < 2; ++step) {
      std::vector<float> arena((size_t)(T * D + T * total));
      Status s = (*stream)->run(**exe, args);
      if (s.is_ok()) s = (*stream)->download(std::span<std::byte>((std::byte*)arena.data(), arena.size() * 4), (*exe)->buffer(2), 0);
      if (s.is_ok()) s = (*stream)->synchronize();
      if (!s.is_ok()) {
        failed << where << ", step " << step << ": " << s.message() << "\n";
        continue;
      }
      float worst = 0;
      for (size_t i = 0; i < want_sum.size(); ++i) worst = std::max(worst, std::fabs(arena[i] - want_sum[i]));
      if (worst > 1e-5f) failed << where << ", step " << step << ": all_reduce is off the host's sum by up to " << worst << "\n";
      for (size_t i = 0; i < want_gather.size(); ++i)
        if (std::memcmp(&arena[(size_t)(T * D) + i], &want_gather[i], 4) != 0) {
          failed << where << ", step " << step << ": all_gather's row " << i / (size_t)total << " column " << i % (size_t)total
                 << " is " << arena[(size_t)(T * D) + i] << ", its owner's value " << want_gather[i] << "\n";
          break;
        }
    }
  }
  return failed.str();
}

// Every device of `name` one rank, each on its own thread.
void check_collectives(const std::string& name, const std::string& library) {
  Backend* b = load_backend(name);
  REQUIRE(b != nullptr);
  const int world = (int)std::min<size_t>(b->enumerate().size(), 8);
  MESSAGE(world << " ranks; seed " << test_seed());
  // Equal and unequal shares of the gathered columns (131 is prime), graph
  // and direct buckets, a step that fills its bucket and steps that do not.
  const std::vector<CollectiveCase> cases = {
      {64, 64 * world, 8, 5},        // equal shares (one ncclAllGather), graph
      {32, 131, 16, 16},             // unequal shares (grouped broadcasts), graph, full bucket
      {96, 131, 600, 517},           // unequal, launched one by one (past kGraphMaxTokens)
      {64, 32 * world, 600, 300},    // equal, launched one by one
  };
  auto groups = in_process_groups(world);
  std::vector<std::string> failures((size_t)world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r] { failures[(size_t)r] = run_rank(*b, *groups[(size_t)r], library, cases); });
  for (auto& t : ranks) t.join();
  for (const std::string& f : failures) CHECK_MESSAGE(f.empty(), f);
}

// One rank alone: the communicator of one, and what use_communicator refuses.
class HostOnlyCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "threads"; }
  Status all_reduce_sum(void*, size_t, DType, Stream*) override { return Status::ok(); }
  Status all_gather(const void*, void*, std::span<const size_t>, DType, Stream*) override { return Status::ok(); }
  Status send(const void*, size_t, int, Stream*) override { return Status::ok(); }
  Status recv(void*, size_t, int, Stream*) override { return Status::ok(); }
};

void check_one_rank(const std::string& name, const std::string& library) {
  Backend* b = load_backend(name);
  REQUIRE(b != nullptr);
  auto dev = b->open(0);
  REQUIRE_MESSAGE(dev.has_value(), dev.status().message());
  const Status foreign = (*dev)->use_communicator(std::make_shared<HostOnlyCommunicator>());
  CHECK(foreign.code() == StatusCode::invalid_argument);
  CHECK(foreign.message().find("'threads' communicator cannot reach this device's memory") != std::string::npos);
  CHECK_FALSE((*dev)->kernels().query(OpQuery{OpKind::all_gather}).supported);
  auto groups = in_process_groups(1);
  auto comm = (*dev)->create_communicator(*groups[0]);
  REQUIRE_MESSAGE(comm.has_value(), comm.status().message());
  CHECK((*comm)->name() == library);
  CHECK((*comm)->size() == 1);
  REQUIRE((*dev)->use_communicator(*comm).is_ok());
  CHECK((*dev)->kernels().query(OpQuery{OpKind::all_gather}).supported);
  REQUIRE((*dev)->use_communicator(nullptr).is_ok());
  CHECK_FALSE((*dev)->kernels().query(OpQuery{OpKind::all_reduce}).supported);
}

}  // namespace

TEST_CASE("cuda: NCCL all_reduce and all_gather nodes (equal and unequal shares, graph and direct) match the host's sums across every GPU, one rank per thread" *
          needs(cuda_nccl_gpus(2))) {
  check_collectives("cuda", "nccl");
}

TEST_CASE("rocm: RCCL all_reduce and all_gather nodes (equal and unequal shares, graph and direct) match the host's sums across every GPU, one rank per thread" *
          needs(rocm_rccl_gpus(2))) {
  check_collectives("rocm", "rccl");
}

TEST_CASE("cuda: a one-rank NCCL communicator is made and used, another kind is refused, and without one the table refuses collectives" *
          needs(cuda_nccl_gpus(1))) {
  check_one_rank("cuda", "nccl");
}

TEST_CASE("rocm: a one-rank RCCL communicator is made and used, another kind is refused, and without one the table refuses collectives" *
          needs(rocm_rccl_gpus(1))) {
  check_one_rank("rocm", "rccl");
}
