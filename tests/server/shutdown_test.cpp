// SIGTERM: the server stops taking work (/health 503), lets running
// streams end until --shutdown-timeout, cancels the rest, and exits 0.
#include <doctest/doctest.h>

#include <atomic>

#include "server/server_process.h"

using namespace tessera::testing;

namespace {

// A stream read slowly, so that it is still being written when the signal comes.
struct SlowStream {
  std::atomic<bool> started{false};
  std::string body;
  bool ok = false;
  std::thread thread;
  ~SlowStream() {
    if (thread.joinable()) thread.join();
  }
  SlowStream(const ServerProcess& server, int max_tokens, int n = 1) {
    thread = std::thread([this, &server, max_tokens, n] {
      auto c = server.client();
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.body = json{{"prompt", {1}}, {"max_tokens", max_tokens}, {"n", n}, {"temperature", 0}, {"stream", true}, {"ignore_eos", true}}.dump();
      req.set_header("Content-Type", "application/json");
      int pieces = 0;
      req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
        body.append(d, n);
        if (pieces++ == 0) {
          started = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        }
        return true;
      };
      auto r = c.send(req);
      ok = r && r->status == 200;
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

}  // namespace

TEST_CASE("on SIGTERM it refuses new work, finishes the running stream and exits 0") {
  // Long enough (8 x 3000 tokens: more megabytes of events than the sockets buffer while the
  // client sleeps) to be running while the test looks.
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf"), "--shutdown-timeout", "120"});
  SlowStream s(server, 3000, 8);
  server.terminate();
  // Draining: still listening, but not ready.
  auto c = server.client();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto h = c.Get("/health");
  REQUIRE(h);
  CHECK(h->status == 503);
  auto refused = post_json(c, "/v1/completions", R"({"prompt": [1], "max_tokens": 2})");
  CHECK(refused.status == 503);
  s.thread.join();
  CHECK(s.ok);
  const auto chunks = stream_chunks(s.body);
  REQUIRE(!chunks.empty());
  int finished = 0, tokens = 0;
  for (const auto& ch : chunks) {
    if (!ch["choices"][0]["finish_reason"].is_null()) {
      CHECK(ch["choices"][0]["finish_reason"] == "length");
      ++finished;
    }
    ++tokens;
  }
  CHECK(finished == 8);
  CHECK(tokens >= 8 * 3000);
  CHECK(server.stop() == 0);
}

TEST_CASE("streams still running at --shutdown-timeout end well-formed and the server exits 0") {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf"), "--shutdown-timeout", "0.2"});
  SlowStream s(server, 4000);
  server.terminate();
  s.thread.join();
  CHECK(s.ok);
  const auto chunks = stream_chunks(s.body);  // [DONE] last
  REQUIRE(!chunks.empty());
  const json& last = chunks.back()["choices"][0];
  // Cancelled ("abort"), unless the model was quicker than the deadline.
  CHECK((last["finish_reason"] == "abort" || last["finish_reason"] == "length"));
  CHECK(server.stop() == 0);
}

TEST_CASE("a model that is missing or unreadable ends the server with one line and a non-zero exit") {
  auto missing = run_tessera({"serve", "-m", "/nonexistent/model.gguf", "--port", "0"});
  CHECK(missing.exit_code != 0);
  REQUIRE(missing.err_lines().size() == 1);
  CHECK(missing.err_lines()[0].find("/nonexistent/model.gguf") != std::string::npos);
  // Not a model: it listens first, then the background load fails.
  const std::string bad = temp_dir() + "/not_a_model.gguf";
  {
    std::ofstream(bad) << "GGUF but not really";
  }
  auto broken = run_tessera({"serve", "-m", bad, "--port", "0"});
  CHECK(broken.exit_code == 1);
  CHECK(broken.out.rfind("listening on http://127.0.0.1:", 0) == 0);
  REQUIRE(broken.err_lines().size() == 1);
  CHECK(broken.err_lines()[0].find("not_a_model.gguf") != std::string::npos);
}
