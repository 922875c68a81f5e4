// The collectives and transfers of a split model (all_reduce, all_gather,
// send, recv) on the CPU, each rank a thread with its own CPU device and a
// communicator over threads (tests/support/thread_group.h), through the HAL
// as a model runs them, against kernels/reference on fresh random inputs
// (seed printed), with odd shapes and uneven column shares. The MPI
// communicator runs the same plans under mpirun (tests/cli/tensor_parallel_cli_test.cpp).
#include <doctest/doctest.h>

#include <thread>

#include "backends/cpu/cpu_device.h"
#include "conformance/hal_harness.h"
#include "kernels/reference/reference.h"
#include "support/random.h"
#include "support/thread_group.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

OpInput weight_of(const std::vector<float>& v, Shape s) {
  return {OpInput::weight, TensorDesc::contiguous(DType::f32, s), as_bytes(v), StepField::none};
}

// Runs case_for(rank) on `world` CPU devices at once, one thread each; each rank's first output.
template <typename CaseFor>
std::vector<std::vector<float>> run_on_ranks(int world, CaseFor case_for) {
  auto data = std::make_shared<ThreadWorld>(world);
  std::vector<std::vector<float>> outs((size_t)world);
  std::vector<Status> status((size_t)world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      cpu::CpuDevice device(1);
      status[(size_t)r] = device.use_communicator(std::make_shared<ThreadCommunicator>(data, r));
      if (!status[(size_t)r].is_ok()) return;
      auto out = run_op(device, case_for(r));
      if (!out) {
        status[(size_t)r] = out.status();
        return;
      }
      outs[(size_t)r] = from_bytes<float>((*out)[0]);
    });
  for (auto& t : threads) t.join();
  for (const Status& s : status) REQUIRE_MESSAGE(s.is_ok(), s.message());
  return outs;
}

}  // namespace

TEST_CASE("collectives: all_reduce over 2 and 3 CPU ranks equals the reference sum, every rank") {
  Rng rng(41);
  for (int world : {2, 3}) {
    CAPTURE(world);
    const int64_t rows = 5, cols = 37;
    std::vector<std::vector<float>> x((size_t)world);
    for (auto& v : x) v = rng.floats((size_t)(rows * cols), -4.0f, 4.0f);
    const auto outs = run_on_ranks(world, [&](int r) {
      OpCase c{OpKind::all_reduce, NoParams{}, {weight_of(x[(size_t)r], Shape{rows, cols})}};
      plain_step(c, 1);
      return c;
    });
    std::vector<const float*> ptrs;
    for (auto& v : x) ptrs.push_back(v.data());
    std::vector<float> want((size_t)(rows * cols));
    kernels::reference::all_reduce_sum(ptrs.data(), world, want.data(), rows * cols);
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      REQUIRE(outs[(size_t)r].size() == want.size());
      // f32 sums of `world` terms against the f64 reference: within a rounding per term.
      for (size_t i = 0; i < want.size(); ++i) CHECK(std::abs(outs[(size_t)r][i] - want[i]) <= 1e-6f * (float)world * (1 + std::abs(want[i])));
      CHECK(outs[(size_t)r] == outs[0]);  // every rank the same bits: the next layer reads the same stream everywhere
    }
  }
}

TEST_CASE("collectives: all_gather of uneven column shares over 2 and 3 CPU ranks equals the reference, every rank") {
  Rng rng(42);
  for (int world : {2, 3}) {
    CAPTURE(world);
    const int64_t rows = 3, total = 101;  // 101 = 50 + 51, 33 + 34 + 34
    std::vector<std::vector<float>> parts((size_t)world);
    for (int r = 0; r < world; ++r) parts[(size_t)r] = rng.floats((size_t)(rows * shard_range(total, world, r).size()));
    const auto outs = run_on_ranks(world, [&](int r) {
      OpCase c{OpKind::all_gather, AllGatherParams{(int32_t)total, world},
               {weight_of(parts[(size_t)r], Shape{rows, shard_range(total, world, r).size()})}};
      plain_step(c, 1);
      return c;
    });
    std::vector<const float*> ptrs;
    for (auto& v : parts) ptrs.push_back(v.data());
    std::vector<float> want((size_t)(rows * total));
    kernels::reference::all_gather_columns(ptrs.data(), world, rows, total, want.data());
    for (int r = 0; r < world; ++r) CHECK(outs[(size_t)r] == want);  // a copy: exact
  }
}

TEST_CASE("collectives: a plan with a collective and no communicator is refused at compile, naming the node") {
  cpu::CpuDevice device(1);
  OpCase c{OpKind::all_reduce, NoParams{}, {weight_of(std::vector<float>(8, 1.0f), Shape{2, 4})}};
  plain_step(c, 1);
  auto out = run_op(device, c);
  REQUIRE_FALSE(out.has_value());
  CHECK(out.status().message().find("no communicator") != std::string::npos);
}
