// /metrics: Prometheus text whose counters and histograms count exactly what
// the test sent.
#include <doctest/doctest.h>

#include "server/server_process.h"
#include "support/random.h"

using namespace tessera::testing;

TEST_CASE("/metrics counts the prompt and generated tokens and finish reasons of the requests sent") {
  ServerProcess server({"-m", model_path("stories260K.bin")});
  auto c = server.client();
  auto raw = c.Get("/metrics");
  REQUIRE(raw);
  CHECK(raw->get_header_value("Content-Type").rfind("text/plain", 0) == 0);
  for (const char* name : {"tessera:time_to_first_token_seconds", "tessera:inter_token_latency_seconds", "tessera:e2e_request_latency_seconds",
                           "tessera:request_queue_time_seconds", "tessera:request_prompt_tokens", "tessera:request_generation_tokens"})
    CHECK(raw->body.find(std::string("# TYPE ") + name + " histogram") != std::string::npos);
  const auto before = scrape(c);
  CHECK(before.at("tessera:prompt_tokens_total") == 0);
  CHECK(before.at("tessera:kv_cache_usage_perc") == 0);

  // Requests of known sizes: each prompt P tokens, max_tokens M, n choices; greedy, no stop token, so every one ends by length.
  int64_t prompt_tokens = 0, generated = 0, sequences = 0, requests = 0;
  const std::vector<std::tuple<int, int, int, bool>> sent = {{3, 5, 1, false}, {7, 9, 2, true}, {1, 1, 1, true}, {12, 20, 3, false}};
  for (const auto& [p, m, n, stream] : sent) {
    std::vector<int> prompt(p);
    for (int i = 0; i < p; ++i) prompt[i] = 1 + (i * 37) % 500;
    json body = {{"prompt", prompt}, {"max_tokens", m}, {"n", n}, {"temperature", 0}, {"stream", stream}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    prompt_tokens += p;
    generated += (int64_t)m * n;
    sequences += n;
    ++requests;
  }
  // A refused request counts nowhere.
  CHECK(post_json(c, "/v1/completions", R"({"prompt": [1], "max_tokens": -1})").status == 400);
  const auto after = scrape(c);
  CHECK(after.at("tessera:prompt_tokens_total") == prompt_tokens);
  CHECK(after.at("tessera:generation_tokens_total") == generated);
  CHECK(after.at("tessera:request_success_total{finished_reason=\"length\"}") == sequences);
  CHECK(after.at("tessera:request_success_total{finished_reason=\"stop\"}") == 0);
  CHECK(after.at("tessera:request_prompt_tokens_count") == requests);
  CHECK(after.at("tessera:request_prompt_tokens_sum") == prompt_tokens);
  CHECK(after.at("tessera:request_generation_tokens_sum") == generated);
  CHECK(after.at("tessera:e2e_request_latency_seconds_count") == requests);
  CHECK(after.at("tessera:time_to_first_token_seconds_count") == requests);
  CHECK(after.at("tessera:e2e_request_latency_seconds_bucket{le=\"+Inf\"}") == requests);
  // Inter-token gaps of each request's first sequence: M - 1 each.
  int64_t gaps = 0;
  for (const auto& [p, m, n, stream] : sent) gaps += m - 1;
  CHECK(after.at("tessera:inter_token_latency_seconds_count") == gaps);
  CHECK(after.at("tessera:prefix_cache_queries_total") >= prompt_tokens - 4);  // the engine looks up whole blocks of prompts
  CHECK(after.count("tessera:num_preemptions_total"));
  // The gauges are the engine's state when scraped: it releases a finished
  // request's sequences and blocks at the end of the step that finished it,
  // which may be just after the response went out.
  auto settled = after;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (settled.at("tessera:num_requests_running") != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    settled = scrape(c);
  }
  CHECK(settled.at("tessera:num_requests_running") == 0);
  CHECK(settled.at("tessera:num_requests_waiting") == 0);
  CHECK(settled.at("tessera:kv_cache_usage_perc") == 0);
  CHECK(after.count("tessera:prefix_cache_hits_total"));
}
