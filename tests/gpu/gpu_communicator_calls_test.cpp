// The NCCL communicator's own calls (Communicator::all_reduce_sum,
// all_gather, send, recv), which a plan does not reach: across every CUDA
// GPU, one rank per thread over an in-process HostGroup, on a HAL stream and
// without one. The HAL gives code outside a backend no device address, so
// this test allocates and copies with the CUDA runtime itself (linked for it
// alone, tests/CMakeLists.txt); device r of the plugin is runtime device r.
// Checked against the host's sums and copies of every rank's inputs, drawn
// from the printed seed. Skipped by name without two GPUs or without NCCL.
#include <doctest/doctest.h>

#if defined(TESSERA_CUDA_NCCL_BUILT)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_requirements.h"
#include "support/thread_group.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// Device memory of the calling thread's current device, freed at scope exit.
struct DeviceMemory {
  void* p = nullptr;
  explicit DeviceMemory(size_t bytes) {
    if (cudaMalloc(&p, std::max<size_t>(bytes, 4)) != cudaSuccess) p = nullptr;
  }
  ~DeviceMemory() {
    if (p) (void)cudaFree(p);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

std::vector<float> floats_of(int r, uint64_t what, size_t n) { return Rng(5000 + 64 * what + (uint64_t)r).floats(n); }

std::string run_rank(Backend& backend, HostGroup& group) {
  std::ostringstream failed;
  const int rank = group.rank(), world = group.size();
  const std::string who = "rank " + std::to_string(rank) + ": ";
  auto device = backend.open(rank);
  if (!device.has_value()) return who + "open: " + device.status().message();
  auto made = (*device)->create_communicator(group);
  if (!made.has_value()) return who + "create_communicator: " + made.status().message();
  Communicator& comm = **made;
  auto stream = (*device)->create_stream();
  if (!stream.has_value()) return who + "create_stream: " + stream.status().message();
  if (cudaSetDevice(rank) != cudaSuccess) return who + "cudaSetDevice failed";
  // An upload from pageable memory may return before its DMA lands, and the
  // legacy stream does not order the plugin's non-blocking ones: the device
  // is drained after it. The communicator's work is waited for before
  // anything is read back.
  auto put = [&](void* dst, const void* src, size_t bytes) {
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
      failed << who << "upload failed\n";
  };
  auto get = [&](void* dst, const void* src, size_t bytes) {
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) failed << who << "download failed\n";
  };
  auto done = [&](const Status& s, const char* what, bool on_stream) {
    Status all = s;
    if (all.is_ok() && on_stream) all = (*stream)->synchronize();
    if (!all.is_ok()) failed << who << what << ": " << all.message() << "\n";
  };

  // all_reduce_sum: on the stream (4099 values) and without one (3).
  for (const auto& [n, on_stream] : {std::pair<size_t, bool>{4099, true}, std::pair<size_t, bool>{3, false}}) {
    const uint64_t what = on_stream ? 0 : 1;
    DeviceMemory mem(n * 4);
    if (!mem.p) return failed.str() + who + "cudaMalloc failed";
    const std::vector<float> mine = floats_of(rank, what, n);
    put(mem.p, mine.data(), n * 4);
    done(comm.all_reduce_sum(mem.p, n, DType::f32, on_stream ? stream->get() : nullptr), "all_reduce_sum", on_stream);
    std::vector<float> got(n);
    get(got.data(), mem.p, n * 4);
    float worst = 0;
    for (size_t i = 0; i < n; ++i) {
      double want = 0;
      for (int r = 0; r < world; ++r) want += floats_of(r, what, n)[i];
      worst = std::max(worst, std::fabs(got[i] - (float)want));
    }
    if (worst > 1e-5f) failed << who << "all_reduce_sum of " << n << " values is off the host's sum by up to " << worst << "\n";
  }

  // all_gather: equal counts (ncclAllGather), unequal (grouped broadcasts),
  // unequal with a rank that sends nothing; f32, and bf16 (2-byte offsets).
  struct Gather {
    std::vector<size_t> counts;
    DType dtype;
    bool on_stream;
  };
  std::vector<Gather> gathers;
  gathers.push_back({std::vector<size_t>((size_t)world, 777), DType::f32, true});
  std::vector<size_t> unequal, with_zero;
  for (int r = 0; r < world; ++r) {
    unequal.push_back((size_t)shard_range(1001, world, r).size());
    with_zero.push_back((size_t)shard_range(world - 1, world, r).size());  // rank 0 has none
  }
  gathers.push_back({unequal, DType::f32, false});
  gathers.push_back({with_zero, DType::f32, true});
  gathers.push_back({unequal, DType::bf16, true});
  for (size_t g = 0; g < gathers.size(); ++g) {
    const Gather& c = gathers[g];
    const size_t elem = c.dtype == DType::f32 ? 4 : 2;
    size_t total = 0;
    for (size_t n : c.counts) total += n;
    std::vector<std::vector<std::byte>> sent;
    for (int r = 0; r < world; ++r) sent.push_back(Rng(6000 + 64 * g + (uint64_t)r).bytes(c.counts[(size_t)r] * elem));
    DeviceMemory send(sent[(size_t)rank].size()), recv(total * elem);
    if (!send.p || !recv.p) return failed.str() + who + "cudaMalloc failed";
    put(send.p, sent[(size_t)rank].data(), sent[(size_t)rank].size());
    done(comm.all_gather(send.p, recv.p, c.counts, c.dtype, c.on_stream ? stream->get() : nullptr), "all_gather", c.on_stream);
    std::vector<std::byte> got(total * elem), want;
    get(got.data(), recv.p, got.size());
    for (const auto& s : sent) want.insert(want.end(), s.begin(), s.end());
    if (got != want) failed << who << "all_gather " << g << " (" << name(c.dtype) << ") differs from the ranks' blocks in order\n";
  }

  // send / recv along the chain 0 -> 1 -> ... -> world-1, on the stream.
  const size_t bytes = 12345;
  const std::vector<std::byte> message = Rng(7000).bytes(bytes);
  DeviceMemory buf(bytes);
  if (!buf.p) return failed.str() + who + "cudaMalloc failed";
  if (rank == 0) put(buf.p, message.data(), bytes);
  if (rank > 0) done(comm.recv(buf.p, bytes, rank - 1, stream->get()), "recv", true);
  if (rank + 1 < world) done(comm.send(buf.p, bytes, rank + 1, stream->get()), "send", true);
  std::vector<std::byte> got(bytes);
  get(got.data(), buf.p, bytes);
  if (got != message) failed << who << "the bytes sent along the chain arrived changed\n";
  if (comm.send(buf.p, bytes, rank, nullptr).code() != StatusCode::invalid_argument)
    failed << who << "sending to itself was not refused\n";
  return failed.str();
}

}  // namespace

TEST_CASE("cuda: the NCCL communicator's own all_reduce_sum, all_gather (equal, unequal, a rank with none, bf16), send and recv match the host, with a stream and without" *
          needs(cuda_nccl_gpus(2))) {
  Backend* b = load_backend("cuda");
  REQUIRE(b != nullptr);
  const int world = (int)std::min<size_t>(b->enumerate().size(), 8);
  MESSAGE(world << " ranks; seed " << test_seed());
  auto groups = in_process_groups(world);
  std::vector<std::string> failures((size_t)world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) ranks.emplace_back([&, r] { failures[(size_t)r] = run_rank(*b, *groups[(size_t)r]); });
  for (auto& t : ranks) t.join();
  for (const std::string& f : failures) CHECK_MESSAGE(f.empty(), f);
}
#endif
