// The asynchronous HAL on every device (core/hal/stream.h, event.h): events,
// uploads that take their bytes before returning, downloads that land by the
// next event, device-side copies (through pinned host_staging buffers too),
// and batched KV-block copies. The oracle is the host: every byte the device
// ends up with is predicted from the random inputs by plain memcpy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "hal_harness.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// Streams, events and buffers of devices that can make them (the skeleton cannot).
template <class Body>
void on_every_stream_device(Body body) {
  auto& devices = devices_under_test();
  REQUIRE(!devices.empty());
  for (auto& d : devices) {
    CAPTURE(d.label);
    auto probe = d.device->create_stream();
    if (!probe) {
      MESSAGE(d.label << " makes no stream: " << probe.status().message());
      continue;
    }
    body(*d.device);
  }
}

std::unique_ptr<Buffer> alloc(Device& d, uint64_t bytes, MemoryUse use) {
  auto b = d.allocate(bytes, use);
  REQUIRE_MESSAGE(b.has_value(), b.status().message());
  return std::move(*b);
}

std::vector<std::byte> read_back(Device& d, Stream& s, Buffer& b, uint64_t offset, size_t n) {
  std::vector<std::byte> out(n);
  REQUIRE(s.download(out, b, offset).is_ok());
  auto e = d.create_event();
  REQUIRE(e.has_value());
  REQUIRE(s.record(**e).is_ok());
  REQUIRE((*e)->synchronize().is_ok());
  CHECK((*e)->query());
  return out;
}

}  // namespace

TEST_CASE("an upload takes its bytes before it returns, and a download lands by the next event, at odd offsets") {
  Rng rng(701);
  on_every_stream_device([&](Device& d) {
    auto s = std::move(*d.create_stream());
    const size_t n = 4099;
    auto buf = alloc(d, n + 13, MemoryUse::activations);
    // Several uploads back to back from ONE host array overwritten after each:
    // each must have taken its own bytes.
    std::vector<std::byte> expect(n + 13, std::byte{0});
    REQUIRE(s->upload(*buf, 0, expect).is_ok());  // a fresh buffer's bytes are unspecified (Vulkan reuses freed memory)
    std::vector<std::byte> host(n);
    for (int round = 0; round < 3; ++round) {
      const uint64_t off = (uint64_t)rng.integer(0, 13);
      const size_t len = (size_t)rng.integer(1, (int32_t)n);
      const auto data = rng.bytes(len);
      std::copy(data.begin(), data.end(), host.begin());
      REQUIRE(s->upload(*buf, off, {host.data(), len}).is_ok());
      std::fill(host.begin(), host.end(), std::byte{0xAB});
      std::copy(data.begin(), data.end(), expect.begin() + (ptrdiff_t)off);
    }
    CHECK(read_back(d, *s, *buf, 0, n + 13) == expect);
    CHECK(read_back(d, *s, *buf, 7, 100) == std::vector<std::byte>(expect.begin() + 7, expect.begin() + 107));
    REQUIRE(s->synchronize().is_ok());
  });
}

TEST_CASE("copies between device buffers and through pinned host_staging buffers keep every byte") {
  Rng rng(702);
  on_every_stream_device([&](Device& d) {
    auto s = std::move(*d.create_stream());
    const size_t n = 3001;
    auto pinned_in = alloc(d, n, MemoryUse::host_staging);
    auto pinned_out = alloc(d, n, MemoryUse::host_staging);
    REQUIRE(pinned_in->host_data() != nullptr);
    REQUIRE(pinned_out->host_data() != nullptr);
    auto a = alloc(d, n, MemoryUse::activations);
    auto b = alloc(d, n + 64, MemoryUse::kv_cache);
    const auto data = rng.bytes(n);
    std::memcpy(pinned_in->host_data(), data.data(), n);
    // pinned -> a -> b (at an offset) -> pinned_out, all queued, then one event.
    REQUIRE(s->copy(*pinned_in, 0, *a, 0, n).is_ok());
    REQUIRE(s->copy(*a, 0, *b, 64, n).is_ok());
    REQUIRE(s->copy(*b, 64 + 5, *pinned_out, 0, n - 5).is_ok());
    auto e = std::move(*d.create_event());
    REQUIRE(s->record(*e).is_ok());
    REQUIRE(e->synchronize().is_ok());
    CHECK(std::memcmp(pinned_out->host_data(), data.data() + 5, n - 5) == 0);
    // A range past either end is refused before anything is queued.
    CHECK(s->copy(*a, 1, *b, 0, n).code() == StatusCode::out_of_range);
    CHECK(s->copy(*a, 0, *b, 64 + 1, n).code() == StatusCode::out_of_range);
    CHECK(s->upload(*a, n - 1, {data.data(), 2}).code() == StatusCode::out_of_range);
  });
}

TEST_CASE("events: complete when never recorded, after synchronize, and a second stream waits for the first") {
  Rng rng(703);
  on_every_stream_device([&](Device& d) {
    auto s1 = std::move(*d.create_stream());
    auto s2 = std::move(*d.create_stream());
    auto e = std::move(*d.create_event());
    CHECK(e->query());
    CHECK(e->synchronize().is_ok());
    const size_t n = 1 << 16;
    auto x = alloc(d, n, MemoryUse::activations);
    auto y = alloc(d, n, MemoryUse::activations);
    // Repeated: a wait that did not order would be seen on some round.
    for (int round = 0; round < 4; ++round) {
      const auto data = rng.bytes(n);
      REQUIRE(s1->upload(*x, 0, data).is_ok());
      REQUIRE(s1->record(*e).is_ok());
      REQUIRE(s2->wait(*e).is_ok());
      REQUIRE(s2->copy(*x, 0, *y, 0, n).is_ok());
      CHECK(read_back(d, *s2, *y, 0, n) == data);
      CHECK(e->query());
    }
    REQUIRE(s1->synchronize().is_ok());
    REQUIRE(s2->synchronize().is_ok());
  });
}

TEST_CASE("copy_blocks copies every listed block of every pool in one batch, in place and out to host memory") {
  Rng rng(704);
  on_every_stream_device([&](Device& d) {
    auto s = std::move(*d.create_stream());
    // Five pools of 23 blocks; block bytes differ per pool: 42 is an f16 or
    // bf16 pool's block of 3 tokens x 7 values (the copy moves bytes of any KV type).
    const int32_t blocks = 23;
    const std::vector<uint64_t> block_bytes = {256, 256, 96, 1040, 42};
    std::vector<std::unique_ptr<Buffer>> pools, host;
    std::vector<std::vector<std::byte>> expect, expect_host;
    for (uint64_t bb : block_bytes) {
      auto data = rng.bytes(bb * blocks);
      pools.push_back(alloc(d, bb * blocks, MemoryUse::kv_cache));
      REQUIRE(s->upload(*pools.back(), 0, data).is_ok());
      expect.push_back(data);
      host.push_back(alloc(d, bb * blocks, MemoryUse::host_staging));
      std::memset(host.back()->host_data(), 0, bb * blocks);
      expect_host.push_back(std::vector<std::byte>(bb * blocks, std::byte{0}));
    }
    // Copy-on-write pairs: distinct destinations, sources never overwritten in the batch.
    std::vector<int32_t> ids(blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng.engine());
    std::vector<BlockCopy> cow;
    for (int i = 0; i < 7; ++i) cow.push_back({ids[(size_t)i], ids[(size_t)(i + 7)]});
    std::vector<KvPoolCopy> in_place;
    for (size_t p = 0; p < pools.size(); ++p) {
      in_place.push_back({pools[p].get(), pools[p].get(), block_bytes[p]});
      for (const BlockCopy& c : cow)
        std::copy_n(expect[p].begin() + (ptrdiff_t)(c.src * block_bytes[p]), block_bytes[p],
                    expect[p].begin() + (ptrdiff_t)(c.dst * block_bytes[p]));
    }
    REQUIRE(s->copy_blocks(in_place, cow).is_ok());
    // Swap out: blocks to the same indices of pinned host pools.
    std::vector<BlockCopy> swap = {{ids[20], ids[20]}, {ids[21], 0}, {3, 22}};
    std::vector<KvPoolCopy> out;
    for (size_t p = 0; p < pools.size(); ++p) {
      out.push_back({pools[p].get(), host[p].get(), block_bytes[p]});
      for (const BlockCopy& c : swap)
        std::copy_n(expect[p].begin() + (ptrdiff_t)(c.src * block_bytes[p]), block_bytes[p],
                    expect_host[p].begin() + (ptrdiff_t)(c.dst * block_bytes[p]));
    }
    REQUIRE(s->copy_blocks(out, swap).is_ok());
    for (size_t p = 0; p < pools.size(); ++p) {
      CAPTURE(p);
      CHECK(read_back(d, *s, *pools[p], 0, expect[p].size()) == expect[p]);
      CHECK(std::memcmp(host[p]->host_data(), expect_host[p].data(), expect_host[p].size()) == 0);
    }
    // A block outside a pool is refused before anything moves.
    const std::vector<BlockCopy> bad = {{1, 2}, {0, blocks}};
    CHECK(s->copy_blocks(in_place, bad).code() == StatusCode::out_of_range);
    const std::vector<BlockCopy> self = {{4, 4}};
    CHECK(s->copy_blocks(in_place, self).code() == StatusCode::invalid_argument);
    for (size_t p = 0; p < pools.size(); ++p) CHECK(read_back(d, *s, *pools[p], 0, expect[p].size()) == expect[p]);
  });
}
