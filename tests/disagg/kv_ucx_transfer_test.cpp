// The prefill worker's sender and the decode worker's receiver over UCX on
// loopback, two engines in one process: every reference case decodes to
// run.c's ids after its K/V crossed the wire chunk by chunk; a decode side
// that is gone fails the prefill's request with an error naming the ucp call
// and leaks no block; an aborted transfer fails the request waiting for it.
#include <doctest/doctest.h>

#include <thread>

#include "disagg/ucx_requirement.h"
#include "engine/disagg/kv_receiver.h"
#include "engine/disagg/kv_sender.h"
#include "engine/disagg/kv_wire.h"
#include "engine/engine_fixture.h"

using namespace tessera;
using namespace tessera::testing;
using namespace tessera::disagg;

namespace {

EngineSetup setup(int32_t chunk) {
  EngineSetup s;
  s.model = "models/stories260K.bin";
  s.kv_type = "f32";
  s.config.scheduler.max_prefill_chunk = chunk;
  return s;
}

void require_idle_and_empty(ServingEngine& e) {
  for (int i = 0; i < 2000 && (e.metrics().running + e.metrics().waiting > 0); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const BlockManager& b = e.blocks_for_tests();
  CHECK(b.num_sequences() == 0);
  CHECK(b.available_blocks() == b.num_blocks());
  CHECK(b.check_invariants().is_ok());
}

// A prefill engine (7-token chunks) with its sender and a decode engine
// with its receiver on a free loopback port.
struct UcxPair {
  TestEngine a = open_test_engine(setup(7));
  TestEngine b = open_test_engine(setup(64));
  std::unique_ptr<KvReceiver> receiver;
  std::unique_ptr<KvSender> sender;
  HostPort to;
  UcxPair() {
    auto r = KvReceiver::create(*b.engine, {.host = "127.0.0.1", .port = 0, .ucx = {.timeout_ms = 5000}});
    REQUIRE_MESSAGE(r.has_value(), r.status().message());
    receiver = std::move(*r);
    auto s = KvSender::create(*a.engine, {.timeout_ms = 5000});
    REQUIRE(s.has_value());
    sender = std::move(*s);
    to = HostPort{"127.0.0.1", receiver->port()};
  }
};

}  // namespace

TEST_CASE("disagg: over UCX on loopback every stories260K reference case decodes to run.c's ids on the other engine" * needs(ucx_build())) {
  UcxPair w;
  TestEngine &a = w.a, &b = w.b;
  KvReceiver* receiver = w.receiver.get();
  KvSender* sender = w.sender.get();
  const HostPort to = w.to;
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  uint64_t id = 100;
  // Every case at once: the prefills run one after another on this thread
  // while the decode side waits for each transfer on its own.
  std::vector<std::thread> decoders;
  std::vector<std::vector<int32_t>> got(cases.size());
  std::vector<std::string> errors(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    decoders.emplace_back([&, i, tid = id + i] {
      auto h = receiver->submit(cases[i].request, tid, Delivery::result, {});
      if (!h) {
        errors[i] = h.status().message();
        return;
      }
      const RequestResult& r = (*h)->wait();
      errors[i] = r.sequences[0].error;
      got[i] = full_ids(cases[i], r);
    });
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    auto o = sender->prefill(cases[i].request, to, id + i);
    REQUIRE_MESSAGE(o.has_value(), o.status().message());
    CHECK(o->first_token == cases[i].full_ids[cases[i].prompt.size()]);
    CHECK(o->messages >= 2 * 5);  // stories260K: 5 layers, K and V, one message each a chunk
  }
  for (auto& t : decoders) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    CHECK(errors[i] == "");
    CHECK(join_ids(got[i]) == join_ids(cases[i].full_ids));
  }
  CHECK(receiver->pending() == 0);
  require_idle_and_empty(*a.engine);
  require_idle_and_empty(*b.engine);
}

TEST_CASE("disagg: a decode worker that is gone fails the prefill with an error and leaks no block on the prefill side" * needs(ucx_build())) {
  TestEngine a = open_test_engine(setup(7));
  TestEngine b = open_test_engine(setup(64));
  auto receiver = KvReceiver::create(*b.engine, {.host = "127.0.0.1", .port = 0, .ucx = {.timeout_ms = 1500}});
  REQUIRE(receiver.has_value());
  const HostPort to{"127.0.0.1", (*receiver)->port()};
  receiver->reset();  // the decode worker went away
  auto sender = KvSender::create(*a.engine, {.timeout_ms = 1500});
  REQUIRE(sender.has_value());
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  auto o = (*sender)->prefill(cases[0].request, to, 7);
  REQUIRE_FALSE(o.has_value());
  MESSAGE(o.status().message());
  CHECK(o.status().message().find("ucp_") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(8));
  // The prefill engine serves on, and a request there is still right.
  auto h = a->submit(cases[1].request);
  REQUIRE(h.has_value());
  CHECK(join_ids(full_ids(cases[1], (*h)->wait())) == join_ids(cases[1].full_ids));
  require_idle_and_empty(*a.engine);
}

TEST_CASE("disagg: an aborted or never-sent transfer fails the request waiting for it, and the receiver keeps nothing" * needs(ucx_build())) {
  TestEngine b = open_test_engine(setup(64));
  auto receiver = KvReceiver::create(*b.engine, {.host = "127.0.0.1", .port = 0, .ucx = {.timeout_ms = 800}});
  REQUIRE(receiver.has_value());
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 60, nullptr);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*receiver)->abort(42, "the prefill worker failed (test)");
  });
  auto h = (*receiver)->submit(cases[0].request, 42, Delivery::result, {});
  aborter.join();
  REQUIRE_FALSE(h.has_value());
  CHECK(h.status().message() == "the prefill worker failed (test)");
  auto late = (*receiver)->submit(cases[0].request, 43, Delivery::result, {});
  REQUIRE_FALSE(late.has_value());
  CHECK(late.status().message().find("no K/V from the prefill worker within 800 ms") != std::string::npos);
  // Entries kept to swallow late messages go after twice the timeout.
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  CHECK((*receiver)->pending() == 0);
  require_idle_and_empty(*b.engine);
}

TEST_CASE("disagg: a prefill that queues longer than the receiver keeps a silent transfer still arrives whole" * needs(ucx_build())) {
  // The receiver drops a transfer silent for twice its timeout (600 ms here);
  // the request waits behind a step that takes 900 ms before its first chunk.
  EngineSetup sa = setup(64);
  sa.config.scheduler.max_num_seqs = 1;
  TestEngine a = open_test_engine(sa);
  TestEngine b = open_test_engine(setup(64));
  auto receiver = KvReceiver::create(*b.engine, {.host = "127.0.0.1", .port = 0, .ucx = {.timeout_ms = 300}});
  REQUIRE(receiver.has_value());
  auto sender = KvSender::create(*a.engine, {.timeout_ms = 2000});
  REQUIRE(sender.has_value());
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  Request slow = cases[0].request;
  slow.max_tokens = 1;
  auto blocker = a->submit_prefill(slow, [](const KvChunk&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(900));
    return Status::ok();
  });
  REQUIRE(blocker.has_value());
  auto o = (*sender)->prefill(cases[1].request, {"127.0.0.1", (*receiver)->port()}, 77);
  REQUIRE_MESSAGE(o.has_value(), o.status().message());
  auto h = (*receiver)->submit(cases[1].request, 77, Delivery::result, {});
  REQUIRE_MESSAGE(h.has_value(), h.status().message());
  CHECK(join_ids(full_ids(cases[1], (*h)->wait())) == join_ids(cases[1].full_ids));
  (*blocker)->wait();
  require_idle_and_empty(*a.engine);
  require_idle_and_empty(*b.engine);
}

// The commit carries the first token's logprobs over the wire; the request
// decoded on the other side reports what one engine reports for it.
TEST_CASE("disagg: over UCX a request with logprobs gets one engine's logprobs, the first token's carried in the commit" * needs(ucx_build())) {
  UcxPair w;
  TestEngine &a = w.a, &b = w.b;
  Request q = reference_cases("reference/stories260K.greedy.txt", 30, nullptr).at(2).request;
  q.logprobs = 4;
  auto whole = a->submit(q);
  REQUIRE(whole.has_value());
  const SequenceResult want = (*whole)->wait().sequences[0];
  SequenceResult got;
  std::thread decoder([&] {
    auto h = w.receiver->submit(q, 7, Delivery::result, {});
    if (!h) got.error = h.status().message();
    else got = (*h)->wait().sequences[0];
  });
  auto o = w.sender->prefill(q, w.to, 7);
  REQUIRE_MESSAGE(o.has_value(), o.status().message());
  decoder.join();
  REQUIRE(got.error == "");
  REQUIRE(want.top_logprobs.at(0).size() == 4);
  check_same_logprobs(got, want);
  require_idle_and_empty(*a.engine);
  require_idle_and_empty(*b.engine);
}

TEST_CASE("disagg: a commit message round-trips n sequences with and without logprobs, and a cut or padded one is refused in one line") {
  CommitMessage c;
  c.first.push_back({42, 0x1234567890abcdefull, std::nullopt});
  auto plain = decode_commit(encode_commit(c));
  REQUIRE(plain.has_value());
  REQUIRE(plain->first.size() == 1);
  CHECK(plain->first[0].token == 42);
  CHECK(plain->first[0].rng_state == 0x1234567890abcdefull);
  CHECK_FALSE(plain->first[0].logprobs.has_value());
  c.first[0].logprobs = FirstLogprobs{{42, -0.25f}, {{42, -0.25f}, {7, -1.5f}, {9, -3.0f}}};
  c.first.push_back({7, 99, FirstLogprobs{{7, -1.5f}, {}}});
  c.first.push_back({9, 5, std::nullopt});
  std::vector<std::byte> bytes = encode_commit(c);
  auto with = decode_commit(bytes);
  REQUIRE(with.has_value());
  REQUIRE(with->first.size() == 3);
  REQUIRE(with->first[0].logprobs.has_value());
  CHECK(with->first[0].logprobs->chosen.logprob == -0.25f);
  REQUIRE(with->first[0].logprobs->top.size() == 3);
  CHECK(with->first[0].logprobs->top[1].token == 7);
  CHECK(with->first[0].logprobs->top[2].logprob == -3.0f);
  REQUIRE(with->first[1].logprobs.has_value());
  CHECK(with->first[1].logprobs->top.empty());
  CHECK(with->first[1].rng_state == 99);
  CHECK_FALSE(with->first[2].logprobs.has_value());
  CHECK(with->first[2].token == 9);
  for (size_t cut : {size_t{0}, size_t{5}, size_t{8}, bytes.size() - 1}) {
    CAPTURE(cut);
    auto bad = decode_commit(std::span(bytes).first(cut));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.status().message().starts_with("kv transfer: a commit message of " + std::to_string(cut) + " bytes: "));
  }
  bytes.push_back(std::byte{0});
  auto padded = decode_commit(bytes);
  REQUIRE_FALSE(padded.has_value());
  CHECK(padded.status().message().find("1 bytes past its last sequence") != std::string::npos);
}
