// /v1/chat/completions: the response and chunk shapes (chat.completion,
// delta.role then delta.content), checked against /v1/completions on the
// prompt the template renders.
#include <doctest/doctest.h>

#include "server/server_process.h"
#include "support/requirements.h"
#include "tools/tessera/openai_request.h"
#include "tools/tessera/openai_response.h"

using namespace tessera::testing;

namespace {

// A template simple enough to render by hand here.
const char* kTemplate =
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";

}  // namespace

TEST_CASE("chat completions equal completions of the rendered prompt, whole and streamed") {
  const std::string tpl = temp_dir() + "/chat.jinja";
  {
    std::ofstream(tpl) << kTemplate;
  }
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf"), "--chat-template", tpl});
  auto c = server.client();
  const json messages = {{{"role", "system"}, {"content", "Be brief."}},
                         {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Hello "}}, {{"type", "text"}, {"text", "world"}}})}}};
  const std::string rendered = "<|system|>Be brief.\n<|user|>Hello world\n<|assistant|>";
  auto plain = post_json(c, "/v1/completions", json{{"prompt", rendered}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}}.dump());
  REQUIRE(plain.status == 200);
  json body = {{"messages", messages}, {"max_completion_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}, {"logprobs", true}, {"top_logprobs", 2}};
  auto r = post_json(c, "/v1/chat/completions", body.dump());
  REQUIRE_MESSAGE(r.status == 200, r.text);
  CHECK(r.body["object"] == "chat.completion");
  CHECK(r.body["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
  const json& ch = r.body["choices"][0];
  CHECK(ch["message"]["role"] == "assistant");
  CHECK(ch["message"]["content"] == plain.body["choices"][0]["text"]);
  CHECK(ch["finish_reason"] == "length");
  CHECK(ch["logprobs"]["content"].size() == 8);
  CHECK(ch["logprobs"]["content"][0]["top_logprobs"].size() == 2);
  CHECK(r.body["usage"] == plain.body["usage"]);

  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto s = c.Post("/v1/chat/completions", body.dump(), "application/json");
  REQUIRE(s);
  const auto chunks = stream_chunks(s->body);
  REQUIRE(chunks.size() >= 3);
  CHECK(chunks[0]["object"] == "chat.completion.chunk");
  CHECK(chunks[0]["choices"][0]["delta"]["role"] == "assistant");
  std::string content;
  for (size_t i = 1; i + 1 < chunks.size(); ++i) {
    CHECK(!chunks[i]["choices"][0]["delta"].contains("role"));
    content += chunks[i]["choices"][0]["delta"].value("content", "");
  }
  CHECK(content == plain.body["choices"][0]["text"]);
  CHECK(chunks.back()["choices"].empty());
  CHECK(chunks.back()["usage"] == plain.body["usage"]);
}

// Until templates render, the chat route's own pieces are checked here directly.
TEST_CASE("chat bodies parse into checked messages and sampling, and refusals name the field") {
  using namespace tessera::cli;
  RequestLimits limits;
  auto p = parse_openai_request(Endpoint::chat_completions,
                                R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
                                    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "n": 2, "seed": 9, "stop": "x",
                                    "logprobs": true, "top_logprobs": 3, "stream": true, "stream_options": {"include_usage": true},
                                    "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"5": -100}, "unknown": [1]})",
                                limits);
  REQUIRE_MESSAGE(p.has_value(), p.status().message());
  CHECK(p->messages[0]["content"] == "ab");
  CHECK(p->base.max_tokens == 7);
  CHECK(p->max_tokens_given);
  CHECK(p->base.sampling.temperature == doctest::Approx(0.5));
  CHECK(p->base.sampling.top_p == doctest::Approx(0.9));
  CHECK(p->base.n == 2);
  CHECK(p->base.sampling.seed == 9);
  CHECK(p->base.stop == std::vector<std::string>{"x"});
  CHECK(p->base.logprobs == 3);
  CHECK(p->chat_logprobs);
  CHECK(p->stream);
  CHECK(p->include_usage);
  CHECK(p->base.sampling.presence_penalty == doctest::Approx(0.5));
  CHECK(p->base.sampling.frequency_penalty == doctest::Approx(-0.5));
  REQUIRE(p->base.sampling.logit_bias.size() == 1);
  CHECK(p->base.sampling.logit_bias[0] == std::pair<int32_t, float>{5, -100.0f});

  auto bad = parse_openai_request(Endpoint::chat_completions, R"({"messages": [{"role": "user", "content": "a"}], "temperature": "hot"})", limits);
  REQUIRE(!bad.has_value());
  CHECK(bad.status().message() == "'temperature': expected a number, got string");
  CHECK(error_param(bad.status().message()) == "temperature");
}

TEST_CASE("chat responses and chunks have OpenAI's shape") {
  using namespace tessera::cli;
  ResponseHeader h{"chatcmpl-1", 1700000000, "m", true};
  ChoiceOutput choice;
  choice.text = "hi";
  choice.finish = tessera::FinishReason::stop;
  choice.logprobs = {{"hi", -0.5f, {{"hi", -0.5f}, {"ho", -1.5f}}}};
  ResponseOptions o;
  o.logprobs = true;
  const auto j = json::parse(dump(response_json(h, {choice}, o, 3, 1)));
  CHECK(j["object"] == "chat.completion");
  CHECK(j["choices"][0]["message"] == json{{"role", "assistant"}, {"content", "hi"}});
  CHECK(j["choices"][0]["finish_reason"] == "stop");
  CHECK(j["choices"][0]["logprobs"]["content"][0]["token"] == "hi");
  CHECK(j["choices"][0]["logprobs"]["content"][0]["bytes"] == json::array({104, 105}));
  CHECK(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"][1]["token"] == "ho");
  CHECK(j["usage"] == json{{"prompt_tokens", 3}, {"completion_tokens", 1}, {"total_tokens", 4}});

  ChunkPart first;
  first.first = true;
  const auto c0 = json::parse(dump(chunk_json(h, first, ResponseOptions{})));
  CHECK(c0["object"] == "chat.completion.chunk");
  CHECK(c0["choices"][0]["delta"] == json{{"role", "assistant"}, {"content", ""}});
  CHECK(c0["choices"][0]["finish_reason"].is_null());
  ChunkPart mid;
  mid.text = "h";
  CHECK(json::parse(dump(chunk_json(h, mid, ResponseOptions{})))["choices"][0]["delta"] == json{{"content", "h"}});
  ChunkPart last;
  last.finish = tessera::FinishReason::length;
  const auto c2 = json::parse(dump(chunk_json(h, last, ResponseOptions{})));
  CHECK(c2["choices"][0]["delta"] == json::object());
  CHECK(c2["choices"][0]["finish_reason"] == "length");
  const auto u = json::parse(dump(usage_chunk_json(h, 3, 1)));
  CHECK(u["choices"].empty());
  CHECK(u["usage"]["total_tokens"] == 4);
  // Invalid UTF-8 in text is replaced, not thrown.
  mid.text = "\xff";
  CHECK(dump(chunk_json(h, mid, ResponseOptions{})).find("\xef\xbf\xbd") != std::string::npos);
}

TEST_CASE("a template that prints bos_token gets one BOS, not two") {
  const std::string tpl = temp_dir() + "/bos.jinja";
  {
    std::ofstream(tpl) << "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}";
  }
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf"), "--chat-template", tpl});
  auto c = server.client();
  auto plain = post_json(c, "/v1/completions", json{{"prompt", "Hello world"}, {"max_tokens", 4}, {"temperature", 0}, {"return_token_ids", true}}.dump());
  REQUIRE_MESSAGE(plain.status == 200, plain.text);
  auto chat = post_json(c, "/v1/chat/completions",
                        json{{"messages", {{{"role", "user"}, {"content", "Hello world"}}}}, {"max_tokens", 4}, {"temperature", 0}, {"return_token_ids", true}}.dump());
  REQUIRE_MESSAGE(chat.status == 200, chat.text);
  CHECK(chat.body["usage"]["prompt_tokens"] == plain.body["usage"]["prompt_tokens"]);
  CHECK(chat.body["choices"][0]["token_ids"] == plain.body["choices"][0]["token_ids"]);
}
