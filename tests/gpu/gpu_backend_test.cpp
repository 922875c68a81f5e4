// The CUDA and ROCm plugins (libtessera-backend-cuda.so, -rocm.so, one
// source): built wherever their compiler is (CI builds both), run wherever a
// GPU is. Without a GPU every case that needs one is reported Skipped, by
// name, with the runtime's reason; the cases here that need none check what a
// user without a GPU sees.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "support/cli.h"
#include "gpu/gpu_requirements.h"
#include "support/requirements.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// Loads, and either lists its devices with their arch or says in one line why
// there are none, and refuses --backend NAME in one line.
void check_discovery(const std::string& name, const std::string& arch_prefix) {
  Backend* b = load_backend(name);
  REQUIRE_MESSAGE(b != nullptr, "the " << name << " plugin is built but did not load");
  const auto devices = b->enumerate();
  const auto listed = run_tessera({"devices"});
  REQUIRE(listed.exit_code == 0);
  const auto run = run_tessera({"run", "--backend", name, "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1", "-n", "4"});
  if (devices.empty()) {
    const std::string why = b->why_none();
    CHECK(!why.empty());
    CHECK(why.find('\n') == std::string::npos);
    std::string line = name;
    line += ": no device (";
    line += why;
    line += ")\n";
    CHECK(listed.out.find(line) != std::string::npos);
    CHECK(run.exit_code != 0);
    REQUIRE(run.err_lines().size() == 1);
    CHECK(run.err_lines()[0].find(name + " backend: no device (") != std::string::npos);
  } else {
    for (const auto& d : devices) {
      CHECK(d.arch.rfind(arch_prefix, 0) == 0);
      CHECK(d.memory_bytes > 0);
      CHECK(d.compute_units > 0);
      CHECK(listed.out.find(name + ":" + std::to_string(d.index) + "  " + d.name) != std::string::npos);
    }
  }
}

// Bytes through every path a buffer has: upload into device memory, a device
// copy, a batched block copy (copy-on-write's), a pinned staging buffer, and
// download; two streams ordered by an event; free memory reported.
void check_buffers(const std::string& name) {
  Backend* b = load_backend(name);
  REQUIRE(b != nullptr);
  auto dev = b->open(0);
  REQUIRE_MESSAGE(dev.has_value(), dev.status().message());
  Device& d = **dev;
  const unsigned seed = std::random_device{}();
  MESSAGE("seed " << seed);
  std::mt19937 gen(seed);
  const uint64_t n = (uint64_t{9} << 20) + 37;  // more than two staging slots, odd
  std::vector<std::byte> src(n);
  for (auto& x : src) x = (std::byte)(gen() & 0xff);
  auto a = d.allocate(n, MemoryUse::activations);
  auto c = d.allocate(n, MemoryUse::activations);
  auto pinned = d.allocate(n, MemoryUse::host_staging);
  REQUIRE(a.has_value());
  REQUIRE(c.has_value());
  REQUIRE(pinned.has_value());
  REQUIRE((*pinned)->host_data() != nullptr);
  CHECK((*a)->host_data() == nullptr);
  auto s1 = d.create_stream();
  auto s2 = d.create_stream();
  auto e = d.create_event();
  REQUIRE(s1.has_value());
  REQUIRE(s2.has_value());
  REQUIRE(e.has_value());
  REQUIRE((*s1)->upload(**a, 0, src).is_ok());
  REQUIRE((*s1)->copy(**a, 0, **c, 0, n).is_ok());
  // Blocks 0 and 2 of 4 KiB copied onto 1 and 3 within c.
  const KvPoolCopy pool{c->get(), c->get(), 4096};
  const BlockCopy blocks[] = {{0, 1}, {2, 3}};
  REQUIRE((*s1)->copy_blocks(std::span(&pool, 1), blocks).is_ok());
  REQUIRE((*s1)->record(**e).is_ok());
  REQUIRE((*s2)->wait(**e).is_ok());
  REQUIRE((*s2)->copy(**c, 0, **pinned, 0, n).is_ok());
  REQUIRE((*s2)->synchronize().is_ok());
  std::vector<std::byte> want = src;
  std::memcpy(want.data() + 4096, src.data(), 4096);
  std::memcpy(want.data() + 3 * 4096, src.data() + 2 * 4096, 4096);
  CHECK(std::memcmp((*pinned)->host_data(), want.data(), n) == 0);
  std::vector<std::byte> back(n);
  REQUIRE((*s1)->download(back, **c, 0).is_ok());
  REQUIRE((*s1)->synchronize().is_ok());
  CHECK(back == want);
  // Out of range and a block past the pool are errors, before anything moves.
  CHECK(!(*s1)->upload(**a, n - 1, std::span(src.data(), 2)).is_ok());
  const BlockCopy past[] = {{0, (int32_t)(n / 4096) + 1}};
  CHECK(!(*s1)->copy_blocks(std::span(&pool, 1), past).is_ok());
  auto free_bytes = d.free_memory();
  REQUIRE(free_bytes.has_value());
  CHECK(*free_bytes > 0);
  CHECK(*free_bytes <= d.info().memory_bytes);
}

}  // namespace

TEST_CASE("cuda: the plugin loads, without a GPU lists none, says why in one line, and --backend cuda is refused in one line" *
          needs(cuda_plugin())) {
  check_discovery("cuda", "sm_");
}

TEST_CASE("rocm: the plugin loads, without a GPU lists none, says why in one line, and --backend rocm is refused in one line" *
          needs(rocm_plugin())) {
  check_discovery("rocm", "gfx");
}

TEST_CASE("cuda: buffers, staging, device and block copies, downloads and cross-stream events move every byte" * needs(cuda_gpu())) {
  check_buffers("cuda");
}

TEST_CASE("rocm: buffers, staging, device and block copies, downloads and cross-stream events move every byte" * needs(rocm_gpu())) {
  check_buffers("rocm");
}
