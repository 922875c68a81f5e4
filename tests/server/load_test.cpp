// Many concurrent clients, some of which walk away mid-stream: no 5xx,
// every stream that was read to its end well-formed, and afterwards no
// request running and no KV block held.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>

#include "server/server_process.h"
#include "support/random.h"

using namespace tessera::testing;

TEST_CASE("concurrent streaming clients with random disconnects leave no errors and the KV cache empty") {
  ServerProcess server({"-m", model_path("stories260K.bin"), "--max-num-seqs", "8"});
  const int clients = 16, requests_each = 6;
  std::atomic<int> server_errors{0}, completed{0}, disconnected{0}, whole{0}, bad_streams{0};
  std::mutex log_mu;
  std::vector<std::string> problems;
  auto problem = [&](const std::string& p) {
    std::lock_guard lock(log_mu);
    if (problems.size() < 20) problems.push_back(p);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      Rng rng(1000 + t);
      auto c = server.client();
      for (int k = 0; k < requests_each; ++k) {
        const int plen = 1 + (int)rng.integer(0, 40);
        std::vector<int> prompt(plen);
        prompt[0] = 1;
        for (int i = 1; i < plen; ++i) prompt[i] = (int)rng.integer(3, 511);
        const int max_tokens = 1 + (int)rng.integer(0, 120);
        const int n = 1 + (int)rng.integer(0, 2);
        const bool stream = rng.integer(0, 4) != 0;
        // Some streams are dropped after a few events: the client goes away.
        const int drop_after = rng.integer(0, 2) == 0 ? (int)rng.integer(0, 6) : -1;
        json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"n", n}, {"temperature", rng.integer(0, 1) ? 0.0 : 0.9},
                     {"stream", stream}, {"stream_options", {{"include_usage", true}}}};
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/completions";
        req.body = body.dump();
        req.set_header("Content-Type", "application/json");
        std::string got;
        int pieces = 0;
        const bool drop = stream && drop_after >= 0;
        req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
          got.append(data, len);
          return !(drop && ++pieces > drop_after);
        };
        auto r = c.send(req);
        if (drop && !r) {
          ++disconnected;
          c.stop();
          continue;
        }
        if (!r) {
          problem("request failed: " + httplib::to_string(r.error()));
          ++server_errors;
          continue;
        }
        if (r->status >= 500) {
          ++server_errors;
          problem("status " + std::to_string(r->status) + ": " + got);
          continue;
        }
        if (r->status != 200) {
          problem("status " + std::to_string(r->status) + ": " + got);
          ++bad_streams;
          continue;
        }
        ++completed;
        if (!stream) {
          json j = json::parse(got, nullptr, false);
          if (j.is_discarded() || j["choices"].size() != (size_t)n || j["usage"]["completion_tokens"] != max_tokens * n) {
            ++bad_streams;
            problem("bad response: " + got);
          }
          continue;
        }
        // Well-formed: data events, [DONE] last, each choice one finish_reason, usage last.
        auto events = sse_payloads(got);
        bool ok = !events.empty() && events.back() == "[DONE]";
        std::map<int, int> finishes;
        int tokens = 0;
        json usage;
        for (size_t i = 0; ok && i + 1 < events.size(); ++i) {
          json j = json::parse(events[i], nullptr, false);
          if (j.is_discarded()) {
            ok = false;
            break;
          }
          if (j["choices"].empty()) {
            usage = j["usage"];
            ok = ok && i + 2 == events.size();
            continue;
          }
          const json& ch = j["choices"][0];
          if (!ch["finish_reason"].is_null()) ++finishes[ch["index"].get<int>()];
          ++tokens;
        }
        ok = ok && (int)finishes.size() == n;
        for (auto& [i, f] : finishes) ok = ok && f == 1;
        ok = ok && usage.is_object() && usage["completion_tokens"] == max_tokens * n && usage["prompt_tokens"] == plen;
        if (ok) {
          ++whole;
        } else {
          ++bad_streams;
          problem("malformed stream: " + got.substr(0, 2000));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& p : problems) MESSAGE(p);
  MESSAGE("completed " << completed.load() << ", whole streams " << whole.load() << ", disconnected " << disconnected.load());
  CHECK(server_errors == 0);
  CHECK(bad_streams == 0);
  CHECK(completed + disconnected == clients * requests_each);
  CHECK(server.alive());

  // Cancelled requests end at the engine's next step: soon nothing runs and no block is held.
  auto c = server.client();
  std::map<std::string, double> m;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    m = scrape(c);
    // A dropped stream's request is recorded once its cancellation has ended it.
    if (m["tessera:kv_cache_usage_perc"] == 0 && m["tessera:num_requests_running"] == 0 && m["tessera:num_requests_waiting"] == 0 &&
        m["tessera:e2e_request_latency_seconds_count"] == completed + disconnected)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  CHECK(m["tessera:kv_cache_usage_perc"] == 0);
  CHECK(m["tessera:num_requests_running"] == 0);
  CHECK(m["tessera:num_requests_waiting"] == 0);
  CHECK(m["tessera:request_success_total{finished_reason=\"error\"}"] == 0);
  // Every request the engine ran was recorded, cancelled ones as abort (or finished first).
  CHECK(m["tessera:e2e_request_latency_seconds_count"] == completed + disconnected);
  CHECK(post_json(c, "/v1/completions", R"({"prompt": [1, 2], "max_tokens": 3})").status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("a client that leaves before its whole (non-streamed) response cancels the request") {
  // llama-2-tiny-random runs ~1 ms a step: 4,000 tokens take seconds, so a
  // request still running when it is cancelled ends as abort, not length.
  // EOS is biased away so that nothing but the cancellation ends it early.
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf")});
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 4000, "temperature": 0, "logit_bias": {"2": -100}})";
  {
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(0, 300 * 1000);  // gives up after 0.3 s, closing its socket
    auto r = c.Post("/v1/completions", body, "application/json");
    REQUIRE_FALSE(r);
  }
  auto c = server.client();
  std::map<std::string, double> m;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {
    m = scrape(c);
    if (m["tessera:e2e_request_latency_seconds_count"] == 1 && m["tessera:num_requests_running"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  CHECK(m["tessera:num_requests_running"] == 0);
  CHECK(m["tessera:kv_cache_usage_perc"] == 0);
  CHECK(m["tessera:request_success_total{finished_reason=\"abort\"}"] == 1);
  CHECK(m["tessera:request_success_total{finished_reason=\"length\"}"] == 0);
  CHECK(m["tessera:request_generation_tokens_sum"] < 4000);
  CHECK(server.stop() == 0);
}
