// Refusals: each bad request gets its status and OpenAI's error object
// naming the field, and the server keeps serving.
#include <doctest/doctest.h>

#include "server/server_process.h"
#include "support/random.h"

using namespace tessera::testing;

namespace {

void check_error(const JsonReply& r, int status, const std::string& param = "") {
  CHECK_MESSAGE(r.status == status, r.text);
  REQUIRE_MESSAGE(r.body.is_object(), r.text);
  REQUIRE(r.body.contains("error"));
  const json& e = r.body["error"];
  CHECK(e["message"].is_string());
  CHECK(e["message"].get<std::string>().find('\n') == std::string::npos);  // one line
  CHECK(e["type"].is_string());
  CHECK(e.contains("code"));
  if (!param.empty()) CHECK(e["param"] == param);
}

void check_still_serving(httplib::Client& c) {
  auto r = post_json(c, "/v1/completions", json{{"prompt", {1, 2, 3}}, {"max_tokens", 2}, {"temperature", 0}}.dump());
  CHECK_MESSAGE(r.status == 200, r.text);
}

}  // namespace

TEST_CASE("malformed and mistyped bodies are refused with 400 naming the field, and the server keeps serving") {
  ServerProcess server({"-m", model_path("stories260K.bin"), "--max-n", "4"});
  auto c = server.client();
  struct Case {
    std::string body, param;
  };
  const std::vector<Case> cases = {
      {"{\"prompt\": [1, 2", ""},                               // malformed JSON
      {"[1, 2, 3]", ""},                                       // not an object
      {"", ""},                                                // empty
      {R"({"prompt": [1,2], "temperature": "hot"})", "temperature"},
      {R"({"prompt": [1,2], "temperature": -1})", "temperature"},
      {R"({"prompt": [1,2], "temperature": 1e400})", ""},      // not a finite number: the JSON parser refuses
      {R"({"prompt": [1,2], "max_tokens": 1e30})", "max_tokens"},
      {R"({"prompt": [1,2], "max_tokens": 99999999999999999999999})", "max_tokens"},
      {R"({"prompt": [1,2], "max_tokens": 18446744073709551615})", "max_tokens"},
      {R"({"prompt": [1,2], "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": [1,2], "max_tokens": 100000})", "prompt"},  // beyond the 512-token context? refused or capped below
      {R"({"prompt": [1,2], "n": 5})", "n"},
      {R"({"prompt": [1,2], "n": "2"})", "n"},
      {R"({"prompt": [1,2], "top_p": 0})", "top_p"},
      {R"({"prompt": [1,2], "stop": 7})", "stop"},
      {R"({"prompt": [1,2], "stream": "yes"})", "stream"},
      {R"({"prompt": [1,2], "logprobs": 1000})", "logprobs"},
      {R"({"prompt": [1,2], "logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"prompt": [1,2], "logit_bias": {"3": 500}})", "logit_bias.3"},
      {R"({"prompt": [1,2], "logit_bias": {"100000": 1}})", ""},
      {R"({"prompt": [1,2], "seed": 1.5})", "seed"},
      {R"({"prompt": [1,2], "presence_penalty": 3})", "presence_penalty"},
      {R"({"prompt": 5})", "prompt"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": [[]]})", "prompt[0]"},
      {R"({"prompt": [1, "a"]})", "prompt[1]"},
      {R"({"prompt": [1, -4]})", "prompt[1]"},
      {R"({"prompt": [1, 512]})", "prompt"},                   // outside the vocabulary
      {R"({"prompt": [1, 2147483648]})", "prompt[1]"},
      {R"({"prompt": "text, but the model has no tokenizer"})", "prompt"},
      {R"({})", "prompt"},
      {R"({"prompt": [1,2], "model": 7})", "model"},
  };
  for (const auto& k : cases) {
    CAPTURE(k.body);
    auto r = post_json(c, "/v1/completions", k.body);
    if (k.body.find("100000}") != std::string::npos && k.param == "prompt") {
      // max_tokens beyond the context: within --max-tokens-limit's default it is
      // accepted and ends at the context (finish length), never a 5xx.
      CHECK_MESSAGE((r.status == 200 || r.status == 400), r.text);
      continue;
    }
    check_error(r, 400, k.param);
  }
  // A prompt that fills the context leaves no room to generate.
  std::vector<int> long_prompt(512, 5);
  check_error(post_json(c, "/v1/completions", json{{"prompt", long_prompt}}.dump()), 400, "prompt");
  check_still_serving(c);
}

TEST_CASE("invalid UTF-8, unknown fields, unknown routes and models, oversized bodies") {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf"), "--max-body-bytes", "4096"});
  auto c = server.client();
  // Invalid UTF-8 inside a JSON string: the parser refuses it.
  check_error(post_json(c, "/v1/completions", std::string("{\"prompt\": \"a\xff\xfe b\", \"max_tokens\": 2}")), 400);
  check_error(post_json(c, "/tokenize", std::string("{\"prompt\": \"\xc3\"}")), 400);
  // Unknown fields are ignored.
  auto ok = post_json(c, "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2, "user": "x", "suffix": null, "best_of": 1, "whatever": {"a": [1]}})");
  CHECK_MESSAGE(ok.status == 200, ok.text);
  // Routes and models that are not there.
  auto r404 = c.Get("/v1/nothing");
  REQUIRE(r404);
  CHECK(r404->status == 404);
  CHECK(json::parse(r404->body)["error"]["message"].get<std::string>().find("/v1/nothing") != std::string::npos);
  check_error(post_json(c, "/v1/completions", R"({"model": "gpt-9", "prompt": "Hi"})"), 404, "model");
  // A body over --max-body-bytes.
  const std::string big = "{\"prompt\": \"" + std::string(8000, 'a') + "\"}";
  auto r413 = c.Post("/v1/completions", big, "application/json");
  REQUIRE(r413);
  CHECK(r413->status == 413);
  // Chat without a chat template: 400 naming the missing template.
  auto chat = post_json(c, "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}]})");
  check_error(chat, 400, "messages");
  CHECK(chat.body["error"]["message"].get<std::string>().find("chat template") != std::string::npos);
  // Malformed messages are refused before the template is looked at.
  check_error(post_json(c, "/v1/chat/completions", R"({"messages": "Hi"})"), 400, "messages");
  check_error(post_json(c, "/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "Hi"}]})"), 400, "messages[0].role");
  check_error(post_json(c, "/v1/chat/completions", R"({"messages": [{"role": "user", "content": 3}]})"), 400, "messages[0].content");
  check_error(post_json(c, "/v1/chat/completions", R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"), 400,
              "messages[0].content[0].type");
  check_error(post_json(c, "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})"), 400,
              "top_logprobs");
  // Tokenize and detokenize refuse what they cannot read.
  check_error(post_json(c, "/tokenize", R"({"prompt": 3})"), 400, "prompt");
  check_error(post_json(c, "/detokenize", R"({"tokens": [1, -1]})"), 400, "tokens");
  check_error(post_json(c, "/detokenize", R"({"tokens": [99999999]})"), 400, "tokens");
  CHECK(server.alive());
  auto after = post_json(c, "/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})");
  CHECK(after.status == 200);
}

TEST_CASE("with --api-key, /v1 routes need 'Authorization: Bearer KEY', and /health and /metrics stay open") {
  ServerProcess server({"-m", model_path("stories260K.bin"), "--api-key", "sekrit-key"});
  auto c = server.client();
  const std::string body = R"({"prompt": [1, 2], "max_tokens": 2})";
  check_error(post_json(c, "/v1/completions", body), 401);
  check_error(post_json(c, "/v1/completions", body, {{"Authorization", "Bearer wrong-key!"}}), 401);
  check_error(post_json(c, "/v1/completions", body, {{"Authorization", "Bearer sekrit-ke"}}), 401);
  check_error(post_json(c, "/v1/completions", body, {{"Authorization", "sekrit-key"}}), 401);
  auto models = c.Get("/v1/models");
  REQUIRE(models);
  CHECK(models->status == 401);
  auto ok = post_json(c, "/v1/completions", body, {{"Authorization", "Bearer sekrit-key"}});
  CHECK(ok.status == 200);
  CHECK(c.Get("/health")->status == 200);
  CHECK(c.Get("/metrics")->status == 200);

  // One kept-alive connection: a refused request's body must not be left on
  // it to be read as the next request (which then got a bogus 400).
  auto kept = server.client();
  kept.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    check_error(post_json(kept, "/v1/completions", body, {{"Authorization", "Bearer wrong-key!"}}), 401);
    CHECK(post_json(kept, "/v1/completions", body, {{"Authorization", "Bearer sekrit-key"}}).status == 200);
  }
}

TEST_CASE("/v1/models names the served model, /health is 200 once loaded, and --max-tokens-limit bounds max_tokens") {
  ServerProcess server({"-m", model_path("stories260K.bin"), "--served-model-name", "tiny-stories", "--max-tokens-limit", "8"});
  auto c = server.client();
  auto m = c.Get("/v1/models");
  REQUIRE(m);
  json j = json::parse(m->body);
  CHECK(j["object"] == "list");
  REQUIRE(j["data"].size() == 1);
  CHECK(j["data"][0]["id"] == "tiny-stories");
  CHECK(j["data"][0]["max_model_len"] == 512);
  auto r = post_json(c, "/v1/completions", R"({"model": "tiny-stories", "prompt": [1], "max_tokens": 1})");
  CHECK(r.status == 200);
  CHECK(r.body["model"] == "tiny-stories");
  check_error(post_json(c, "/v1/completions", R"({"model": "stories260K.bin", "prompt": [1]})"), 404, "model");
  // --max-tokens-limit bounds max_tokens.
  check_error(post_json(c, "/v1/completions", R"({"prompt": [1], "max_tokens": 9})"), 400, "max_tokens");
  CHECK(post_json(c, "/v1/completions", R"({"prompt": [1], "max_tokens": 8})").status == 200);
}

TEST_CASE("requests beyond the running batch and --max-waiting-requests are refused with 429") {
  ServerProcess server({"-m", model_path("stories260K.bin"), "--max-num-seqs", "1", "--max-waiting-requests", "0"});
  auto c = server.client();
  // One long stream holds the only slot; a second request meanwhile is refused.
  std::atomic<bool> got_first{false};
  std::thread holder([&] {
    auto hc = server.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = R"({"prompt": [1], "max_tokens": 500, "stream": true, "temperature": 0})";
    req.set_header("Content-Type", "application/json");
    int events = 0;
    // The slot is held until the stream is written out: a client that
    // reads slowly keeps it however fast the model is.
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      if (events++ == 0) {
        got_first = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      }
      return true;
    };
    hc.send(req);
  });
  while (!got_first) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  check_error(post_json(c, "/v1/completions", R"({"prompt": [1, 2], "max_tokens": 2})"), 429);
  holder.join();
  CHECK(post_json(c, "/v1/completions", R"({"prompt": [1, 2], "max_tokens": 2})").status == 200);
}

TEST_CASE("randomly mutated bodies get 200 or a 4xx with an error object, never a 5xx, and the server survives") {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf"), "--max-body-bytes", "65536"});
  auto c = server.client();
  Rng rng(77);
  const std::vector<std::string> seeds = {
      R"({"prompt": "Hello world", "max_tokens": 4, "temperature": 0.7, "top_p": 0.9, "n": 2, "stop": ["a", "b"], "logprobs": 2, "stream": false})",
      R"({"prompt": [[1, 15043], [1, 3186]], "max_tokens": 3, "logit_bias": {"15043": 5}, "seed": 3, "echo": true, "stream": true})",
      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "logprobs": true, "top_logprobs": 2})",
      R"({"prompt": "x", "max_tokens": 2, "presence_penalty": 1, "frequency_penalty": -1, "stream": true, "stream_options": {"include_usage": true}})"};
  const std::vector<std::string> junk = {"null", "true", "-1", "1e308", "\"\"", "[]", "{}", "[[[]]]", "\"\\ud800\"", "18446744073709551616",
                                         "-9223372036854775809", "0.0000001", "\"\\u0000\"", "[-1]", "[2147483647]"};
  int counts[6] = {0};
  for (int i = 0; i < 300; ++i) {
    std::string body = seeds[(size_t)rng.integer(0, (int)seeds.size() - 1)];
    const int how = rng.integer(0, 3);
    if (how == 0) {
      // Flip a few bytes.
      for (int k = rng.integer(1, 4); k > 0; --k) body[(size_t)rng.integer(0, (int)body.size() - 1)] = (char)rng.integer(0, 255);
    } else if (how == 1) {
      body.resize((size_t)rng.integer(0, (int)body.size()));
    } else {
      // Replace one field's value with junk of another type.
      json j = json::parse(body);
      auto it = j.begin();
      std::advance(it, rng.integer(0, (int)j.size() - 1));
      *it = json::parse(junk[(size_t)rng.integer(0, (int)junk.size() - 1)], nullptr, false);
      if (it->is_discarded()) *it = nullptr;
      body = j.dump();
    }
    const std::string path = body.find("messages") != std::string::npos ? "/v1/chat/completions" : "/v1/completions";
    auto r = c.Post(path.c_str(), body, "application/json");
    REQUIRE_MESSAGE(r, "no response to " << body);
    CAPTURE(body);
    CHECK_MESSAGE(r->status < 500, r->body);
    if (r->status >= 400) {
      json e = json::parse(r->body, nullptr, false);
      CHECK_MESSAGE((!e.is_discarded() && e.contains("error")), r->body);
    }
    ++counts[std::min(r->status / 100, 5)];
  }
  MESSAGE("2xx " << counts[2] << ", 4xx " << counts[4]);
  CHECK(server.alive());
}
