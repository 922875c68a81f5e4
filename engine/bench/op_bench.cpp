#include "engine/bench/op_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/huge_pages.h"
#include "core/read_bandwidth.h"
#include "engine/bench/stats.h"

namespace tessera {

namespace {

constexpr uint64_t kAlign = 64;               // every tensor of a copy starts on a cache line
constexpr int kMinReps = 10;                  // at least this many timed calls
constexpr int kMaxReps = 20000;
constexpr int64_t kMaxCopies = 1 << 16;

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

}  // namespace

Expected<OpTiming> time_op(ParallelFor& pf, const OpShape& shape, bool hot, double min_seconds, uint64_t seed) {
  const OpRow* row = find_op(shape.op);
  if (row == nullptr) return invalid_argument("--op: '" + shape.op + "' is not a CPU op; expected one of " + op_names());
  TS_TRY(row->check(shape));
  OpTiming t;
  t.shape = shape;
  t.hot = hot;
  t.cost = row->cost(shape);

  // One copy is every tensor of a call, each cache-line aligned; copies fill 4x the LLC.
  const std::vector<uint64_t> sizes = row->tensor_bytes(shape);
  std::vector<uint64_t> offsets;
  uint64_t stride = 0;
  for (uint64_t b : sizes) offsets.push_back(stride), stride += round_up(std::max<uint64_t>(b, 1), kAlign);
  stride = round_up(stride, 4096);
  const int64_t copies =
      hot ? 1 : std::clamp<int64_t>((int64_t)((4 * last_level_cache_bytes() + stride - 1) / stride), 2, kMaxCopies);
  const uint64_t total = (uint64_t)copies * stride, memory = physical_memory_bytes();
  if (memory > 0 && total > memory / 2)
    return invalid_argument("--op " + shape.op + ": " + std::to_string(copies) + (copies == 1 ? " copy" : " copies") + " of " +
                            std::to_string(stride >> 20) + " MiB of inputs exceed half the machine's " +
                            std::to_string(memory >> 30) + " GiB; expected smaller sizes (" + row->sizes + ")");
  HostBytes data = allocate_huge_pages(total);
  const size_t ws_bytes = row->workspace_bytes(shape, pf.num_threads());
  HostBytes workspace = allocate_huge_pages(std::max<size_t>(ws_bytes, kAlign));
  if (!data || !workspace) return resource_exhausted("--op " + shape.op + ": cannot allocate " + std::to_string(total >> 20) + " MiB");

  std::memset(data.get(), 0, stride);
  std::vector<std::byte*> ptrs(sizes.size());
  auto tensors_of = [&](int64_t copy) {
    for (size_t i = 0; i < sizes.size(); ++i) ptrs[i] = data.get() + (uint64_t)copy * stride + offsets[i];
    return OpTensors(ptrs);
  };
  std::mt19937 gen((uint32_t)seed);
  row->fill(shape, tensors_of(0), gen);
  // The other copies, by the pool's threads: the pages then sit where those threads read them.
  pf.run(copies - 1, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0 + 1; c < c1 + 1; ++c) std::memcpy(data.get() + (uint64_t)c * stride, data.get(), stride);
  });

  using Clock = std::chrono::steady_clock;
  row->run(shape, tensors_of(0), workspace.get(), pf);  // warm-up: threads, frequency, the kernel's code
  std::vector<double> us;
  const auto start = Clock::now();
  for (int i = 0; i < kMaxReps; ++i) {
    const OpTensors tensors = tensors_of((i + 1) % copies);
    const auto t0 = Clock::now();
    row->run(shape, tensors, workspace.get(), pf);
    const auto t1 = Clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (i + 1 >= kMinReps && std::chrono::duration<double>(t1 - start).count() >= min_seconds) break;
  }
  t.copies = (int)copies;
  t.reps = (int)us.size();
  t.time_us = median(us);
  return t;
}

MachineRoofs measure_machine_roofs(ParallelFor& pf) {
  // In the order the CPU backend probes at device open (backends/cpu/cpu_roofs.cpp).
  MachineRoofs r;
  for (ComputeDtype d : {ComputeDtype::f32_fma, ComputeDtype::bf16_dot, ComputeDtype::int8_dot})
    r.compute[(int)d] = measure_compute_roof(pf, d);
  r.read_GBps = measure_read_bandwidth(pf, read_probe_bytes(last_level_cache_bytes()), kReadProbeReps).best_GBps;
  return r;
}

}  // namespace tessera
