// The raw bytes of a stream as curl -N sees them: "data: JSON\n\n" events,
// "data: [DONE]\n\n" last, Content-Type text/event-stream.
#include <doctest/doctest.h>

#include "server/server_process.h"
#include "support/requirements.h"

using namespace tessera::testing;

TEST_CASE("curl -N sees SSE framing, one event per token and data: [DONE] last" * needs(curl_tool())) {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf")});
  const std::string dir = temp_dir();
  const std::string headers = dir + "/sse_headers.txt", body = dir + "/sse_body.txt";
  const std::string req = R"({"prompt": "Hello world", "max_tokens": 5, "temperature": 0, "stream": true, "ignore_eos": true})";
  const std::string cmd = "curl -sS -N -D " + shell_quote(headers) + " -o " + shell_quote(body) + " -H 'Content-Type: application/json' -d " +
                          shell_quote(req) + " " + server.url() + "/v1/completions";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string h = read_file(headers), b = read_file(body);
  CHECK(h.rfind("HTTP/1.1 200", 0) == 0);
  std::string lower;
  for (char ch : h) lower += (char)std::tolower((unsigned char)ch);
  CHECK(lower.find("content-type: text/event-stream") != std::string::npos);
  CHECK(lower.find("transfer-encoding: chunked") != std::string::npos);
  // Every event is exactly "data: " + one line + a blank line.
  REQUIRE(b.size() > 20);
  CHECK(b.rfind("data: ", 0) == 0);
  const std::string done = "data: [DONE]\n\n";
  REQUIRE(b.size() >= done.size());
  CHECK(b.compare(b.size() - done.size(), done.size(), done) == 0);
  CHECK(b.find("\r") == std::string::npos);
  const auto chunks = stream_chunks(b);
  CHECK(chunks.size() == 5);  // one a token, the last with its finish_reason
  for (size_t i = 0; i < chunks.size(); ++i) {
    CHECK(chunks[i]["object"] == "text_completion");
    CHECK(chunks[i]["id"] == chunks[0]["id"]);
    CHECK(chunks[i]["choices"][0]["finish_reason"] == (i + 1 == chunks.size() ? json("length") : json(nullptr)));
  }
}

TEST_CASE("a stream's errors before it starts are plain JSON with their status" * needs(curl_tool())) {
  ServerProcess server({"-m", model_path("stories260K.bin")});
  const std::string out = temp_dir() + "/sse_err.txt";
  const std::string cmd = "curl -sS -N -o " + shell_quote(out) + " -w '%{http_code}' -d '{\"prompt\": [1], \"stream\": true, \"n\": 0}' " +
                          server.url() + "/v1/completions > " + shell_quote(out + ".code");
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(read_file(out + ".code") == "400");
  json j = json::parse(read_file(out));
  CHECK(j["error"]["param"] == "n");
}
