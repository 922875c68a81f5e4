// Requests through the engine: parallel sampling, stop strings and tokens,
// logprobs, streams and callbacks, cancellation, and requests refused at
// submit with one line naming the field while the engine keeps serving.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>

#include "engine/engine_fixture.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

EngineSetup stories() {
  EngineSetup s;
  s.model = "models/stories260K.bin";
  return s;
}

Request sampled(std::vector<int32_t> prompt, int32_t max_tokens, uint64_t seed) {
  Request q;
  q.prompt = std::move(prompt);
  q.max_tokens = max_tokens;
  q.sampling.temperature = 0.9f;
  q.sampling.top_p = 0.95f;
  q.sampling.seed = seed;
  q.ignore_eos = true;
  q.detokenize = false;
  return q;
}

// A copy: the handle (and the result it holds) goes with the temporary.
RequestResult wait_ok(const Expected<std::shared_ptr<RequestState>>& h) {
  REQUIRE_MESSAGE(h.has_value(), h.status().message());
  RequestResult r = (*h)->wait();
  for (const auto& s : r.sequences) REQUIRE_MESSAGE(s.finish != FinishReason::error, s.error);
  return r;
}

}  // namespace

TEST_CASE("engine: n > 1 forks the prompt, and child i equals an independent request with seed + i") {
  TestEngine t = open_test_engine(stories());
  // A prompt that ends inside a block, so the children's first writes copy the shared block.
  const std::vector<int32_t> prompt = {1, 403, 407, 405, 292, 303, 416, 377, 482, 482, 482, 466, 466, 288, 292, 330, 283, 427, 427, 460};
  Request q = sampled(prompt, 60, 1234);
  q.n = 4;
  const RequestResult together = wait_ok(t->submit(q));
  REQUIRE(together.sequences.size() == 4);
  for (int32_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    const RequestResult alone = wait_ok(t->submit(sampled(prompt, 60, 1234 + (uint64_t)i)));
    CHECK(join_ids(together.sequences[(size_t)i].tokens) == join_ids(alone.sequences[0].tokens));
    CHECK(together.sequences[(size_t)i].finish == FinishReason::length);
  }
  // Different seeds gave different streams (else copy-on-write is untested).
  CHECK(together.sequences[0].tokens != together.sequences[1].tokens);
}

TEST_CASE("engine: n > 1 under preemption and with a small cache still equals independent requests") {
  EngineSetup s = stories();
  s.ctx = 256;
  s.kv_blocks = 20;
  s.config.scheduler.max_prefill_chunk = 8;
  TestEngine t = open_test_engine(s);
  const std::vector<int32_t> prompt = {1, 300, 301, 302, 303, 287, 431};
  Request q = sampled(prompt, 150, 77);
  q.n = 3;
  auto h = t->submit(q);
  const RequestResult together = wait_ok(h);
  CHECK(t->metrics().preemptions > 0);
  for (int32_t i = 0; i < 3; ++i) {
    const RequestResult alone = wait_ok(t->submit(sampled(prompt, 150, 77 + (uint64_t)i)));
    CHECK(join_ids(together.sequences[(size_t)i].tokens) == join_ids(alone.sequences[0].tokens));
  }
}

TEST_CASE("engine: stop token ids end a sequence without outputting the token, and max_tokens ends it with length") {
  TestEngine t = open_test_engine(stories());
  Request q;
  q.prompt = {1, 403, 407};
  q.max_tokens = 50;
  q.sampling.temperature = 0;
  q.detokenize = false;
  q.ignore_eos = true;
  const RequestResult full = wait_ok(t->submit(q));
  REQUIRE(full.sequences[0].tokens.size() >= 10);
  CHECK(full.sequences[0].finish == FinishReason::length);
  CHECK(full.sequences[0].tokens.size() == 50);
  const int32_t stop_at = full.sequences[0].tokens[6];
  q.stop_token_ids = {stop_at};
  const RequestResult stopped = wait_ok(t->submit(q));
  CHECK(stopped.sequences[0].finish == FinishReason::stop);
  const auto& want = full.sequences[0].tokens;
  const auto first = std::find(want.begin(), want.end(), stop_at) - want.begin();
  CHECK(join_ids(stopped.sequences[0].tokens) == join_ids(std::vector<int32_t>(want.begin(), want.begin() + first)));
}

TEST_CASE("engine: a stop string ends the text before it and holds back text that may start one") {
  EngineSetup s;
  s.model = "models/aidreams260K.bin";
  s.tokenizer = "models/aidreams260K.tok512.bin";
  TestEngine t = open_test_engine(s);
  Request q;
  q.prompt = t.model.tokenizer->encode("The robot", t.model.tokenizer->default_options());
  q.max_tokens = 100;
  q.sampling.temperature = 0;
  q.ignore_eos = true;
  const RequestResult full = wait_ok(t->submit(q));
  const std::string text = full.sequences[0].text;
  REQUIRE(text.size() > 40);
  // A stop string from the middle of the text: everything before its first occurrence, nothing after.
  const std::string stop = text.substr(text.size() / 2, 5);
  q.stop = {"never in this text", stop};
  std::string streamed;
  std::atomic<int> events{0};
  auto h = t->submit(q, Delivery::callback, [&](const TokenOutput& ev) {
    streamed += ev.text;
    ++events;
  });
  const RequestResult r = wait_ok(h);
  CHECK(r.sequences[0].finish == FinishReason::stop);
  CHECK(r.sequences[0].text == text.substr(0, text.find(stop)));
  CHECK(streamed == r.sequences[0].text);
  CHECK(r.sequences[0].tokens.size() < full.sequences[0].tokens.size());
}

TEST_CASE("engine: logprobs are the log-softmax of the logits, the chosen token the greedy one") {
  TestEngine t = open_test_engine(stories());
  Request q;
  q.prompt = {1, 403, 407};
  q.max_tokens = 8;
  q.sampling.temperature = 0;
  q.ignore_eos = true;
  q.detokenize = false;
  q.logprobs = 5;
  const RequestResult r = wait_ok(t->submit(q));
  const SequenceResult& s = r.sequences[0];
  REQUIRE(s.logprobs.size() == s.tokens.size());
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    CAPTURE(i);
    REQUIRE(s.top_logprobs[i].size() == 5);
    CHECK(s.logprobs[i].token == s.tokens[i]);
    CHECK(s.top_logprobs[i][0].token == s.tokens[i]);  // greedy: the most probable
    CHECK(s.logprobs[i].logprob <= 0);
    for (size_t k = 1; k < 5; ++k) CHECK(s.top_logprobs[i][k].logprob <= s.top_logprobs[i][k - 1].logprob);
  }
  // The same ids as without logprobs (the device's greedy pick equals the host's).
  q.logprobs = -1;
  CHECK(join_ids(wait_ok(t->submit(q)).sequences[0].tokens) == join_ids(s.tokens));
}

TEST_CASE("engine: a pull stream yields every token then ends, and metrics count queue, TTFT and gaps") {
  TestEngine t = open_test_engine(stories());
  Request q = sampled({1, 461}, 20, 5);
  auto h = t->submit(q, Delivery::stream);
  REQUIRE(h.has_value());
  std::vector<int32_t> ids;
  FinishReason finish = FinishReason::none;
  for (TokenOutput ev; (*h)->next(&ev);) {
    if (ev.token >= 0) ids.push_back(ev.token);
    if (ev.finish != FinishReason::none) finish = ev.finish;
  }
  CHECK(finish == FinishReason::length);
  const RequestResult& r = (*h)->wait();
  CHECK(join_ids(ids) == join_ids(r.sequences[0].tokens));
  CHECK(r.metrics.generated_tokens == 20);
  CHECK(r.metrics.itl_ms.size() == 19);
  CHECK(r.metrics.ttft_ms >= r.metrics.queue_ms);
  CHECK(r.metrics.e2e_ms >= r.metrics.ttft_ms);
}

TEST_CASE("engine: cancel from another thread ends the request, and its blocks are free after the next step") {
  TestEngine t = open_test_engine(stories());
  Request q = sampled({1, 461}, 250, 9);
  auto h = t->submit(q, Delivery::stream);
  REQUIRE(h.has_value());
  TokenOutput ev;
  REQUIRE((*h)->next(&ev));
  std::thread([&] { t->cancel(**h); }).join();
  const RequestResult& r = (*h)->wait();
  CHECK(r.sequences[0].finish == FinishReason::cancelled);
  CHECK(r.sequences[0].tokens.size() < 250);
  // Another request runs; once it has, nothing is held.
  wait_ok(t->submit(sampled({1, 300}, 3, 1)));
  // The engine publishes its counts after the step that finished it.
  for (int i = 0; i < 5000 && t->metrics().requests_finished < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const EngineMetrics m = t->metrics();
  CHECK(m.requests_finished == 2);
  CHECK(m.kv_blocks_used == 0);
  CHECK(m.running == 0);
}

TEST_CASE("engine: bad requests are refused at submit with one line naming the field, and the engine keeps serving") {
  TestEngine t = open_test_engine(stories());
  const int32_t ctx = t->max_context();
  struct Bad {
    const char* field;
    void (*edit)(Request&, int32_t ctx);
  } bad[] = {
      {"prompt", [](Request& q, int32_t) { q.prompt.clear(); }},
      {"prompt", [](Request& q, int32_t) { q.prompt = {1, 512}; }},
      {"prompt", [](Request& q, int32_t) { q.prompt = {1, -3}; }},
      {"max_tokens", [](Request& q, int32_t) { q.max_tokens = 0; }},
      {"max_tokens", [](Request& q, int32_t) { q.max_tokens = -5; }},
      {"--top-p", [](Request& q, int32_t) { q.sampling.top_p = 0; }},
      {"--top-p", [](Request& q, int32_t) { q.sampling.top_p = 1.5f; }},
      {"prompt", [](Request& q, int32_t c) { q.prompt.assign((size_t)c + 1, 5); }},
      {"max_tokens", [](Request& q, int32_t c) { q.max_tokens = c; }},
      {"n", [](Request& q, int32_t) { q.n = 0; }},
      {"logprobs", [](Request& q, int32_t) { q.logprobs = 1000; }},
      {"stop_token_ids", [](Request& q, int32_t) { q.stop_token_ids = {99999}; }},
  };
  for (const Bad& b : bad) {
    Request q = sampled({1, 300, 301}, 5, 1);
    b.edit(q, ctx);
    auto h = t->submit(q);
    CAPTURE(b.field);
    REQUIRE_FALSE(h.has_value());
    const std::string msg = h.status().message();
    CAPTURE(msg);
    CHECK(msg.find(b.field) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }
  const RequestResult ok = wait_ok(t->submit(sampled({1, 300, 301}, 5, 1)));
  CHECK(ok.sequences[0].tokens.size() == 5);
}
