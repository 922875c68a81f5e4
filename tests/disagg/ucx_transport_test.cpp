// The UCX transport over loopback, two transports in one process: tagged
// messages, one-sided puts into registered memory, and every failure a
// bounded error naming the ucp call.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "disagg/ucx_requirement.h"
#include "engine/disagg/ucx_transport.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::disagg;
using tessera::testing::needs;
using tessera::testing::ucx_build;

namespace {

struct Pair {
  std::unique_ptr<UcxTransport> server, client;
  EndpointId to_server = 0, to_client = 0;
};

Pair connected_pair(int timeout_ms = 5000) {
  Pair p;
  auto s = UcxTransport::create({.timeout_ms = timeout_ms});
  REQUIRE_MESSAGE(s.has_value(), s.status().message());
  p.server = std::move(*s);
  REQUIRE_MESSAGE(p.server->listen("127.0.0.1", 0).is_ok(), "listen");
  REQUIRE(p.server->listen_port() != 0);
  auto c = UcxTransport::create({.timeout_ms = timeout_ms});
  REQUIRE(c.has_value());
  p.client = std::move(*c);
  // The client's connect waits for the server to answer, so the server
  // progresses (accepts, then completes the wire-up) on another thread meanwhile.
  Expected<EndpointId> accepted = not_found("not yet");
  std::atomic<bool> connected{false};
  std::thread t([&] {
    accepted = p.server->accept(timeout_ms);
    while (!connected) p.server->progress_for(1);
  });
  auto ep = p.client->connect({"127.0.0.1", p.server->listen_port()});
  connected = true;
  t.join();
  REQUIRE_MESSAGE(ep.has_value(), ep.status().message());
  REQUIRE_MESSAGE(accepted.has_value(), accepted.status().message());
  p.to_server = *ep;
  p.to_client = *accepted;
  return p;
}

}  // namespace

TEST_CASE("ucx: tagged messages of 1 byte to 8 MiB arrive intact in both directions over loopback" * needs(ucx_build())) {
  Pair p = connected_pair();
  tessera::testing::Rng rng(1);
  for (size_t n : {size_t(1), size_t(4096), size_t(65536 + 7), size_t(8u << 20)}) {
    const std::vector<std::byte> sent = rng.bytes(n);
    std::vector<std::byte> got(n + 16);
    // Receive on one thread while the other sends: large messages go by
    // rendezvous, which needs both sides to progress.
    Expected<UcxReceived> r = not_found("not yet");
    std::thread t([&] { r = p.server->recv(0x42, ~0ull, got); });
    REQUIRE(p.client->send(p.to_server, 0x42, sent).is_ok());
    t.join();
    REQUIRE_MESSAGE(r.has_value(), r.status().message());
    CHECK(r->bytes == n);
    CHECK(r->tag == 0x42);
    CHECK(std::memcmp(got.data(), sent.data(), n) == 0);

    // And back, the server sending on the endpoint accept() gave it.
    std::vector<std::byte> back(n);
    std::thread t2([&] { r = p.client->recv(0x43, ~0ull, back); });
    REQUIRE(p.server->send(p.to_client, 0x43, sent).is_ok());
    t2.join();
    REQUIRE(r.has_value());
    CHECK(std::memcmp(back.data(), sent.data(), n) == 0);
  }
}

TEST_CASE("ucx: a receive matches its tag under the mask and leaves other tags queued" * needs(ucx_build())) {
  Pair p = connected_pair();
  const std::vector<std::byte> a(100, std::byte{1}), b(200, std::byte{2});
  REQUIRE(p.client->send(p.to_server, (7ull << 32) | 1, a).is_ok());
  REQUIRE(p.client->send(p.to_server, (9ull << 32) | 1, b).is_ok());
  std::vector<std::byte> got(256);
  auto r = p.server->recv(9ull << 32, 0xffffffff00000000ull, got);
  REQUIRE_MESSAGE(r.has_value(), r.status().message());
  CHECK(r->bytes == 200);
  CHECK(got[0] == std::byte{2});
  r = p.server->recv(7ull << 32, 0xffffffff00000000ull, got);
  REQUIRE(r.has_value());
  CHECK(r->bytes == 100);
  CHECK(got[0] == std::byte{1});
}

TEST_CASE("ucx: a put into registered memory lands the bytes at the offset asked" * needs(ucx_build())) {
  Pair p = connected_pair();
  tessera::testing::Rng rng(2);
  const size_t n = 3u << 20;
  std::vector<std::byte> target(n + 4096, std::byte{0});
  auto mem = p.server->map(target.data(), target.size());
  REQUIRE_MESSAGE(mem.has_value(), mem.status().message());
  auto rkey = (*mem)->packed_rkey();
  REQUIRE_MESSAGE(rkey.has_value(), rkey.status().message());
  const std::vector<std::byte> src = rng.bytes(n);
  // The target progresses while the put runs (TCP has no hardware RMA).
  std::atomic<bool> done{false};
  std::thread t([&] {
    while (!done) p.server->progress_for(2);
  });
  const Status st = p.client->put(p.to_server, src, (uint64_t)(uintptr_t)(target.data() + 4096), *rkey);
  done = true;
  t.join();
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  CHECK(std::memcmp(target.data() + 4096, src.data(), n) == 0);
  CHECK(target[4095] == std::byte{0});
}

TEST_CASE("ucx: connecting to a port nobody listens on is an error naming the ucp call, within the timeout" * needs(ucx_build())) {
  auto c = UcxTransport::create({.timeout_ms = 2000});
  REQUIRE(c.has_value());
  // A port just released: nobody listens there.
  auto probe = UcxTransport::create({});
  REQUIRE(probe.has_value());
  REQUIRE((*probe)->listen("127.0.0.1", 0).is_ok());
  const uint16_t port = (*probe)->listen_port();
  probe->reset();
  const auto t0 = std::chrono::steady_clock::now();
  auto ep = (*c)->connect({"127.0.0.1", port});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(ep.has_value());
  MESSAGE(ep.status().message());
  CHECK(ep.status().message().find("ucp_") != std::string::npos);
  CHECK(s < 4.0);
}

TEST_CASE("ucx: a receive nobody sends to times out with an error, not a hang" * needs(ucx_build())) {
  Pair p = connected_pair(500);
  std::vector<std::byte> got(64);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = p.server->recv(0x99, ~0ull, got, 300);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message().find("ucp_tag_recv_nbx: timed out") != std::string::npos);
  CHECK(s < 2.0);
  // The transport still works afterwards.
  std::vector<std::byte> one(8, std::byte{5});
  REQUIRE(p.client->send(p.to_server, 0x99, one).is_ok());
  r = p.server->recv(0x99, ~0ull, got);
  REQUIRE(r.has_value());
  CHECK(r->bytes == 8);
}

TEST_CASE("ucx: a message longer than the receive buffer is an error naming the buffer's size" * needs(ucx_build())) {
  Pair p = connected_pair();
  const std::vector<std::byte> big(1000, std::byte{3});
  std::vector<std::byte> small(100);
  Expected<UcxReceived> r = not_found("not yet");
  std::thread t([&] { r = p.server->recv(0x5, ~0ull, small); });
  (void)p.client->send(p.to_server, 0x5, big);
  t.join();
  REQUIRE_FALSE(r.has_value());
  MESSAGE(r.status().message());
  CHECK(r.status().message().find("100-byte buffer") != std::string::npos);
}

TEST_CASE("ucx: a peer that goes away mid-transfer fails the sender's wait instead of hanging" * needs(ucx_build())) {
  Pair p = connected_pair(1500);
  // The server disappears while the client is sending a message it never receives.
  p.server.reset();
  const std::vector<std::byte> big(16u << 20, std::byte{7});
  const auto t0 = std::chrono::steady_clock::now();
  Status st = p.client->send(p.to_server, 0x1, big);
  // A send UCX buffered may complete; the next one after the failure is seen cannot.
  for (int i = 0; i < 5 && st.is_ok(); ++i) st = p.client->send(p.to_server, 0x1, big);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(st.is_ok());
  MESSAGE(st.message());
  CHECK(st.message().find("ucp_") != std::string::npos);
  CHECK(s < 10.0);
}

TEST_CASE("ucx: a bad address is refused in one line naming the flag") {
  auto a = parse_host_port("localhost", "--kv-listen");
  REQUIRE_FALSE(a.has_value());
  CHECK(a.status().message() == "--kv-listen: expected HOST:PORT, got 'localhost'");
  a = parse_host_port("127.0.0.1:99999", "--kv-listen");
  REQUIRE_FALSE(a.has_value());
  CHECK(a.status().message().find("--kv-listen: port '99999'") == 0);
  a = parse_host_port("127.0.0.1:8123", "--kv-listen");
  REQUIRE(a.has_value());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 8123);
}
