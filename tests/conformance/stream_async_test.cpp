// The asynchronous HAL under stress, on every device: many uploads, downloads
// and copies interleaved at random sizes and offsets with a Vulkan staging
// ring far smaller than the traffic (so it wraps and waits for itself),
// downloads read only once an event after them has completed, streams
// ordered by each other's events in both directions and across devices, and
// one executable run several times before anything is synchronized (its step
// inputs double-buffered). The oracle is the host: a mirror of every buffer
// kept by plain memcpy/memmove, and for the steps the embedding table's rows.
#include <doctest/doctest.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <deque>
#include <numeric>
#include <thread>

#include "hal_harness.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// Sets $TESSERA_VULKAN_RING_BYTES for the streams made while it lives: a
// Vulkan stream's staging ring of this many bytes (other devices ignore it).
struct RingBytes {
  explicit RingBytes(const char* bytes) { setenv("TESSERA_VULKAN_RING_BYTES", bytes, 1); }
  ~RingBytes() { unsetenv("TESSERA_VULKAN_RING_BYTES"); }
};

std::vector<Device*> stream_devices() {
  std::vector<Device*> out;
  for (auto& d : devices_under_test()) {
    auto probe = d.device->create_stream();
    if (probe) out.push_back(d.device.get());
    else MESSAGE(d.label << " makes no stream: " << probe.status().message());
  }
  REQUIRE(!out.empty());
  return out;
}

std::string label_of(Device* d) {
  for (auto& u : devices_under_test())
    if (u.device.get() == d) return u.label;
  return "?";
}

std::unique_ptr<Buffer> alloc(Device& d, uint64_t bytes, MemoryUse use) {
  auto b = d.allocate(bytes, use);
  REQUIRE_MESSAGE(b.has_value(), b.status().message());
  return std::move(*b);
}

std::unique_ptr<Event> event(Device& d) {
  auto e = d.create_event();
  REQUIRE_MESSAGE(e.has_value(), e.status().message());
  return std::move(*e);
}

std::vector<std::byte> read_back(Device& d, Stream& s, Buffer& b, size_t n) {
  std::vector<std::byte> out(n);
  REQUIRE(s.download(out, b, 0).is_ok());
  auto e = event(d);
  REQUIRE(s.record(*e).is_ok());
  REQUIRE(e->synchronize().is_ok());
  return out;
}

}  // namespace

TEST_CASE("stress: uploads, downloads and copies at random sizes and offsets, through a staging ring smaller than the traffic") {
  RingBytes small("4096");  // chunks of 2048 bytes; transfers of up to 6000
  Rng rng(711);
  for (Device* d : stream_devices()) {
    CAPTURE(label_of(d));
    auto s = std::move(*d->create_stream());
    const size_t n = 1 << 15;
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<std::vector<std::byte>> mirror;
    for (MemoryUse use : {MemoryUse::activations, MemoryUse::kv_cache, MemoryUse::host_staging}) {
      bufs.push_back(alloc(*d, n, use));
      mirror.push_back(rng.bytes(n));
      REQUIRE(s->upload(*bufs.back(), 0, mirror.back()).is_ok());
    }
    struct Pending {
      std::vector<std::byte> got, want;
      std::unique_ptr<Event> done;
    };
    std::deque<Pending> pending;
    // Checks the oldest download, after its event: by synchronize, or by polling query.
    auto check_oldest = [&](bool poll) {
      Pending& p = pending.front();
      if (poll) {
        while (!p.done->query()) std::this_thread::yield();
      } else {
        REQUIRE(p.done->synchronize().is_ok());
      }
      CHECK(p.got == p.want);
      pending.pop_front();
    };
    size_t uploads = 0, downloads = 0, copies = 0, overlapping = 0;
    for (int i = 0; i < 500; ++i) {
      const int op = rng.integer(0, 9);
      const size_t b = (size_t)rng.integer(0, 2);
      const size_t len = (size_t)rng.integer(1, 6000);
      const size_t off = (size_t)rng.integer(0, (int32_t)(n - len));
      if (op < 4) {
        // The host array is overwritten as soon as the call returns.
        std::vector<std::byte> host = rng.bytes(len);
        REQUIRE(s->upload(*bufs[b], off, host).is_ok());
        std::memcpy(mirror[b].data() + off, host.data(), len);
        std::fill(host.begin(), host.end(), std::byte{0xCD});
        ++uploads;
      } else if (op < 7) {
        const size_t to = (size_t)rng.integer(0, 2);
        // Within one buffer, often overlapping itself.
        const size_t to_off = to == b && rng.integer(0, 1) ? std::min(n - len, off + (size_t)rng.integer(0, 64))
                                                            : (size_t)rng.integer(0, (int32_t)(n - len));
        REQUIRE(s->copy(*bufs[b], off, *bufs[to], to_off, len).is_ok());
        std::memmove(mirror[to].data() + to_off, mirror[b].data() + off, len);
        ++copies;
        overlapping += to == b && off < to_off + len && to_off < off + len;
      } else {
        Pending p{std::vector<std::byte>(len, std::byte{0xEE}),
                  std::vector<std::byte>(mirror[b].begin() + (ptrdiff_t)off, mirror[b].begin() + (ptrdiff_t)(off + len)), event(*d)};
        REQUIRE(s->download(p.got, *bufs[b], off).is_ok());
        REQUIRE(s->record(*p.done).is_ok());
        pending.push_back(std::move(p));  // moves the vectors, not their bytes
        ++downloads;
      }
      if (!pending.empty() && rng.integer(0, 7) == 0) check_oldest(rng.integer(0, 1) == 1);
    }
    MESSAGE(label_of(d) << ": " << uploads << " uploads, " << downloads << " downloads, " << copies << " copies (" << overlapping
                        << " overlapping)");
    REQUIRE(s->synchronize().is_ok());
    while (!pending.empty()) check_oldest(false);  // synchronize() ran every host copy
    for (size_t b = 0; b < bufs.size(); ++b) CHECK(read_back(*d, *s, *bufs[b], n) == mirror[b]);
  }
}

TEST_CASE("a download's bytes are in place once an event after it completes, synchronized on another thread while the stream goes on") {
  RingBytes small("1024");
  Rng rng(712);
  for (Device* d : stream_devices()) {
    CAPTURE(label_of(d));
    auto s = std::move(*d->create_stream());
    const size_t n = 20000;
    auto x = alloc(*d, n, MemoryUse::activations), y = alloc(*d, n, MemoryUse::activations);
    const auto data = rng.bytes(n);
    REQUIRE(s->upload(*x, 0, data).is_ok());
    std::vector<std::byte> got(n, std::byte{0});
    REQUIRE(s->download(got, *x, 0).is_ok());
    auto e = event(*d);
    REQUIRE(s->record(*e).is_ok());
    // The other thread runs the stream's host copies while this one keeps
    // the stream busy (its ring reuse runs them too).
    Status waited = Status::ok();
    bool same = false;
    std::thread other([&] {
      waited = e->synchronize();
      same = got == data;
    });
    std::vector<std::vector<std::byte>> more(8, std::vector<std::byte>(n / 8));
    for (size_t i = 0; i < more.size(); ++i) {
      REQUIRE(s->upload(*y, 0, rng.bytes(n)).is_ok());
      REQUIRE(s->download(more[i], *x, i * (n / 8)).is_ok());
    }
    other.join();
    REQUIRE(waited.is_ok());
    CHECK(same);
    REQUIRE(s->synchronize().is_ok());
    for (size_t i = 0; i < more.size(); ++i)
      CHECK(std::equal(more[i].begin(), more[i].end(), data.begin() + (ptrdiff_t)(i * (n / 8))));
  }
}

TEST_CASE("copy_blocks: blocks that chain within one pool are copied in the order given, as the CPU copies them") {
  Rng rng(715);
  for (Device* d : stream_devices()) {
    CAPTURE(label_of(d));
    auto s = std::move(*d->create_stream());
    const uint64_t bb = 48;
    const int32_t blocks = 6;
    auto pool = alloc(*d, bb * blocks, MemoryUse::kv_cache);
    auto expect = rng.bytes(bb * blocks);
    REQUIRE(s->upload(*pool, 0, expect).is_ok());
    // 1 -> 2 then 2 -> 3: block 3 gets what block 1 held; 5 -> 0 twice, then 4 -> 0: block 0 ends as block 4.
    const std::vector<BlockCopy> chain = {{1, 2}, {2, 3}, {5, 0}, {5, 0}, {4, 0}};
    for (const BlockCopy& c : chain) std::copy_n(expect.begin() + (ptrdiff_t)(c.src * bb), bb, expect.begin() + (ptrdiff_t)(c.dst * bb));
    const std::vector<KvPoolCopy> pools = {{pool.get(), pool.get(), bb}};
    REQUIRE(s->copy_blocks(pools, chain).is_ok());
    CHECK(read_back(*d, *s, *pool, bb * blocks) == expect);
  }
}

TEST_CASE("streams wait on each other's events in both directions, and on another device's events on the host") {
  Rng rng(713);
  const auto devices = stream_devices();
  for (Device* d : devices) {
    CAPTURE(label_of(d));
    auto s1 = std::move(*d->create_stream());
    auto s2 = std::move(*d->create_stream());
    auto e1 = event(*d), e2 = event(*d);
    const size_t n = 1 << 16;
    auto x = alloc(*d, n, MemoryUse::activations), y = alloc(*d, n, MemoryUse::activations), z = alloc(*d, n, MemoryUse::activations);
    for (int round = 0; round < 4; ++round) {
      const auto a = rng.bytes(n), b = rng.bytes(n);
      REQUIRE(s1->upload(*x, 0, a).is_ok());
      REQUIRE(s1->record(*e1).is_ok());
      REQUIRE(s2->wait(*e1).is_ok());  // y gets a, not b
      REQUIRE(s2->copy(*x, 0, *y, 0, n).is_ok());
      REQUIRE(s2->record(*e2).is_ok());
      REQUIRE(s1->wait(*e2).is_ok());  // x is overwritten only after s2 has copied it
      REQUIRE(s1->upload(*x, 0, b).is_ok());
      REQUIRE(s1->copy(*x, 0, *z, 0, n).is_ok());
      CHECK(read_back(*d, *s2, *y, n) == a);
      CHECK(read_back(*d, *s1, *z, n) == b);
    }
  }
  // Across devices the waiting stream's host waits, and a download the other
  // stream owed is on the host when the wait returns.
  for (Device* from : devices)
    for (Device* to : devices) {
      if (from == to) continue;
      CAPTURE(label_of(from));
      CAPTURE(label_of(to));
      auto sf = std::move(*from->create_stream());
      auto st = std::move(*to->create_stream());
      const size_t n = 5000;
      auto xf = alloc(*from, n, MemoryUse::activations), xt = alloc(*to, n, MemoryUse::activations);
      const auto data = rng.bytes(n);
      std::vector<std::byte> host(n, std::byte{0});
      REQUIRE(sf->upload(*xf, 0, data).is_ok());
      REQUIRE(sf->download(host, *xf, 0).is_ok());
      auto ef = event(*from);
      REQUIRE(sf->record(*ef).is_ok());
      REQUIRE(st->wait(*ef).is_ok());
      CHECK(host == data);
      REQUIRE(st->upload(*xt, 0, host).is_ok());
      CHECK(read_back(*to, *st, *xt, n) == data);
    }
}

TEST_CASE("one executable run several times before synchronizing: each step reads its own inputs") {
  Rng rng(714);
  const int64_t vocab = 37, dim = 64;
  const int32_t max_tokens = 5;
  const auto table = rng.floats((size_t)(vocab * dim), -2, 2);
  OpCase c{OpKind::embedding, NoParams{},
           {{OpInput::weight, TensorDesc::contiguous(DType::f32, Shape{vocab, dim}), as_bytes(table), StepField::none},
            {OpInput::step, {}, {}, StepField::token_ids}}};
  c.bucket = {max_tokens, 1, max_tokens, 1};
  c.block_tables = {0};
  for (Device* d : stream_devices()) {
    CAPTURE(label_of(d));
    auto op = compile_op(*d, c);
    REQUIRE_MESSAGE(op.has_value(), op.status().message());
    const PlanTensor& out = op->exe->plan().logits;
    // Five steps, so each of two step slots is reused twice while earlier steps may still run.
    const int steps = 5;
    std::vector<std::vector<int32_t>> ids(steps);
    std::vector<std::vector<float>> got(steps);
    for (int k = 0; k < steps; ++k) {
      const int32_t m = rng.integer(1, max_tokens);  // the step parameters differ too
      OpCase step = c;
      step.n_tokens = m;
      for (int32_t t = 0; t < m; ++t) step.token_ids.push_back(rng.integer(0, (int32_t)vocab - 1));
      step.positions.resize((size_t)m);
      std::iota(step.positions.begin(), step.positions.end(), 0);
      step.slot_mapping.assign((size_t)m, 0);
      step.query_start = {0, m};
      step.seq_lens = {m};
      REQUIRE(op->stream->run(*op->exe, step_args(step)).is_ok());
      ids[k] = step.token_ids;
      std::fill(step.token_ids.begin(), step.token_ids.end(), 0);  // run() has read them
      got[k].assign((size_t)(m * dim), -777.0f);
      REQUIRE(op->stream->download({reinterpret_cast<std::byte*>(got[k].data()), got[k].size() * 4}, op->exe->buffer(out.buffer), out.offset)
                  .is_ok());
    }
    REQUIRE(op->stream->synchronize().is_ok());
    for (int k = 0; k < steps; ++k) {
      CAPTURE(k);
      std::vector<float> want;
      for (int32_t id : ids[k]) want.insert(want.end(), table.begin() + id * dim, table.begin() + (id + 1) * dim);
      CHECK(got[k] == want);
    }
  }
}
