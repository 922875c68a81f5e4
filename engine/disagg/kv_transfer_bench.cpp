#include "engine/disagg/kv_transfer_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/disagg/ucx_transport.h"

namespace tessera::disagg {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

}  // namespace

Expected<KvTransferBenchReport> bench_kv_transfer(const KvTransferBenchOptions& o) {
  if (o.block_bytes == 0) return invalid_argument("--kv-block-bytes: must be > 0");
  if (o.reps < 1) return invalid_argument("--reps: must be >= 1, got " + std::to_string(o.reps));
  for (int32_t b : o.blocks)
    if (b < 1) return invalid_argument("--kv-blocks: every count must be >= 1, got " + std::to_string(b));
  TS_ASSIGN_OR_RETURN(std::unique_ptr<UcxTransport> server, UcxTransport::create({.timeout_ms = 30000}));
  TS_ASSIGN_OR_RETURN(std::unique_ptr<UcxTransport> client, UcxTransport::create({.timeout_ms = 30000}));
  TS_TRY(server->listen("127.0.0.1", 0));

  // The server side runs on its own thread for the whole bench: it accepts,
  // then serves each phase (receive tagged messages, or progress for puts)
  // as the client asks over a one-word control message.
  enum : uint64_t { kData = 1, kCtl = 2, kAck = 3 };
  uint64_t max_bytes = 0;
  for (int32_t b : o.blocks) max_bytes = std::max<uint64_t>(max_bytes, (uint64_t)b * o.block_bytes);
  std::vector<std::byte> target(max_bytes), source(max_bytes);
  for (size_t i = 0; i < source.size(); ++i) source[i] = (std::byte)(i * 131 + 7);
  TS_ASSIGN_OR_RETURN(std::unique_ptr<UcxMemory> region, server->map(target.data(), target.size()));
  TS_ASSIGN_OR_RETURN(std::vector<std::byte> rkey, region->packed_rkey());

  Status server_status = Status::ok();
  std::atomic<bool> stop{false};
  EndpointId to_client = 0;
  std::thread srv([&] {
    auto ep = server->accept(30000);
    if (!ep) {
      server_status = ep.status();
      return;
    }
    to_client = *ep;
    // Control: [bytes to receive, count]; 0 bytes: progress until the next control.
    for (;;) {
      uint64_t ctl[2] = {0, 0};
      auto pending = server->recv_async(kCtl, ~0ull, std::as_writable_bytes(std::span(ctl)));
      if (!pending) {
        server_status = pending.status();
        return;
      }
      // Progress puts while waiting for the next control word.
      auto r = (*pending)->wait(-1);
      if (!r) {
        if (!stop) server_status = r.status();
        return;
      }
      if (ctl[1] == 0) return;  // done
      for (uint64_t i = 0; i < ctl[1]; ++i) {
        auto got = server->recv(kData, ~0ull, std::span(target.data(), ctl[0]));
        if (!got) {
          server_status = got.status();
          return;
        }
        const uint64_t ack = 1;
        if (Status st = server->send(to_client, kAck, std::as_bytes(std::span(&ack, 1))); !st.is_ok()) {
          server_status = st;
          return;
        }
      }
    }
  });
  // On a failure the server thread's wait ends at its deadline; it is joined.
  auto fail = [&](Status st) -> Status {
    stop = true;
    client.reset();
    srv.join();
    return st;
  };
  auto ep = client->connect({"127.0.0.1", server->listen_port()});
  if (!ep) {
    stop = true;
    srv.join();
    return ep.status();
  }
  KvTransferBenchReport report;
  report.transports = client->describe(*ep);

  for (int32_t blocks : o.blocks) {
    KvTransferTiming t;
    t.blocks = blocks;
    t.bytes = (uint64_t)blocks * o.block_bytes;
    const std::span<const std::byte> src(source.data(), t.bytes);
    // Tagged: one message per transfer, acknowledged, so each timing is a
    // whole delivery, not a buffered send.
    const uint64_t ctl[2] = {t.bytes, (uint64_t)o.reps + 1};
    if (Status st = client->send(*ep, kCtl, std::as_bytes(std::span(ctl))); !st.is_ok()) return fail(st);
    std::vector<double> tag_us;
    for (int32_t r = 0; r <= o.reps; ++r) {
      const auto t0 = Clock::now();
      if (Status st = client->send(*ep, kData, src); !st.is_ok()) return fail(st);
      uint64_t ack = 0;
      auto a = client->recv(kAck, ~0ull, std::as_writable_bytes(std::span(&ack, 1)));
      if (!a) return fail(a.status());
      if (r > 0) tag_us.push_back(us_since(t0));  // the first is a warm-up (registration, rendezvous set-up)
    }
    // Put: the server progresses while it waits for the next control word.
    std::vector<double> put_us;
    for (int32_t r = 0; r <= o.reps; ++r) {
      const auto t0 = Clock::now();
      if (Status st = client->put(*ep, src, (uint64_t)(uintptr_t)target.data(), rkey); !st.is_ok()) return fail(st);
      if (r > 0) put_us.push_back(us_since(t0));
    }
    if (std::memcmp(target.data(), source.data(), t.bytes) != 0)
      return fail(internal_error("kv_transfer bench: the bytes put are not the bytes sent"));
    std::vector<double> copy_us;
    std::vector<std::byte> dst(t.bytes);
    for (int32_t r = 0; r <= o.reps; ++r) {
      const auto t0 = Clock::now();
      std::memcpy(dst.data(), src.data(), t.bytes);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (r > 0) copy_us.push_back(us_since(t0));
    }
    t.tag_us = median(tag_us), t.put_us = median(put_us), t.memcpy_us = median(copy_us);
    t.tag_GBps = t.bytes / t.tag_us / 1e3;
    t.put_GBps = t.bytes / t.put_us / 1e3;
    t.memcpy_GBps = t.bytes / t.memcpy_us / 1e3;
    report.cases.push_back(t);
  }
  const uint64_t done[2] = {0, 0};
  (void)client->send(*ep, kCtl, std::as_bytes(std::span(done)));
  srv.join();
  if (!server_status.is_ok()) return server_status;
  client->close(*ep);
  return report;
}

}  // namespace tessera::disagg
