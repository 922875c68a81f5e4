// /v1/completions through `tessera serve`: greedy ids against run.c's
// references (../shared/reference), streamed and not, n > 1, stop strings,
// logprobs and usage.
#include <doctest/doctest.h>

#include <cmath>

#include "server/server_process.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

namespace {

// The ids and finish reasons of a streamed completion, by choice.
struct Streamed {
  std::map<int, std::vector<int32_t>> ids;
  std::map<int, std::string> text, finish;
  json usage;
};

Streamed read_stream(const std::string& body) {
  Streamed s;
  for (const json& c : stream_chunks(body)) {
    REQUIRE(c["object"] == "text_completion");
    if (c.contains("usage") && c["choices"].empty()) {
      s.usage = c["usage"];
      continue;
    }
    REQUIRE(c["choices"].size() == 1);
    const json& ch = c["choices"][0];
    const int i = ch["index"].get<int>();
    CHECK_MESSAGE(!s.finish.count(i), "choice " << i << " has a chunk after its finish_reason");
    if (ch.contains("token_ids"))
      for (const auto& t : ch["token_ids"]) s.ids[i].push_back(t.get<int32_t>());
    s.text[i] += ch["text"].get<std::string>();
    if (!ch["finish_reason"].is_null()) s.finish[i] = ch["finish_reason"].get<std::string>();
  }
  return s;
}

}  // namespace

TEST_CASE("greedy completions of token-id prompts equal run.c's stories260K ids, streamed and not") {
  ServerProcess server({"-m", model_path("stories260K.bin")});
  auto c = server.client();
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 3);
  for (const auto& rc : cases) {
    const auto prompt = parse_ids(rc.prompt_ids);
    const std::vector<int32_t> want(rc.full_ids.begin() + (long)prompt.size(), rc.full_ids.end());
    json body = {{"prompt", prompt}, {"max_tokens", want.size()}, {"temperature", 0}, {"return_token_ids", true}};
    CAPTURE(rc.prompt_ids);
    auto r = post_json(c, "/v1/completions", body.dump());
    REQUIRE_MESSAGE(r.status == 200, r.text);
    CHECK(r.body["object"] == "text_completion");
    CHECK(r.body["model"] == "stories260K.bin");
    const json& ch = r.body["choices"][0];
    CHECK(ints(ch["token_ids"]) == want);
    CHECK(ch["finish_reason"] == "length");
    CHECK(r.body["usage"]["prompt_tokens"] == prompt.size());
    CHECK(r.body["usage"]["completion_tokens"] == want.size());
    CHECK(r.body["usage"]["total_tokens"] == prompt.size() + want.size());

    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    auto s = c.Post("/v1/completions", body.dump(), "application/json");
    REQUIRE(s);
    REQUIRE(s->status == 200);
    CHECK(s->get_header_value("Content-Type").rfind("text/event-stream", 0) == 0);
    Streamed st = read_stream(s->body);
    CHECK(st.ids[0] == want);
    CHECK(st.finish[0] == "length");
    CHECK(st.usage["completion_tokens"] == want.size());
    CHECK(st.usage["prompt_tokens"] == prompt.size());
  }
}

TEST_CASE("greedy completions of text prompts equal run.c's llama-2-tiny-random ids and text") {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf")});
  auto c = server.client();
  const auto cases = read_text_cases(shared_path("reference/llama-2-tiny-random.greedy.tsv"));
  REQUIRE(!cases.empty());
  for (const auto& rc : cases) {
    CAPTURE(rc.prompt_text);
    auto tok = post_json(c, "/tokenize", json{{"prompt", rc.prompt_text}}.dump());
    REQUIRE(tok.status == 200);
    const auto prompt = ints(tok.body["tokens"]);
    REQUIRE(prompt.size() < rc.full_ids.size());
    CHECK(std::equal(prompt.begin(), prompt.end(), rc.full_ids.begin()));
    CHECK(tok.body["count"] == prompt.size());
    const std::vector<int32_t> want(rc.full_ids.begin() + (long)prompt.size(), rc.full_ids.end());
    // run.c stops only on BOS: so does this request.
    json body = {{"prompt", rc.prompt_text}, {"max_tokens", want.size()}, {"temperature", 0}, {"return_token_ids", true},
                 {"ignore_eos", true}, {"stop_token_ids", {1}}};
    auto r = post_json(c, "/v1/completions", body.dump());
    REQUIRE_MESSAGE(r.status == 200, r.text);
    CHECK(ints(r.body["choices"][0]["token_ids"]) == want);
    // The text is what /detokenize gives for the same ids, and what run.c printed after the prompt.
    auto de = post_json(c, "/detokenize", json{{"tokens", rc.full_ids}}.dump());
    REQUIRE(de.status == 200);
    const std::string full = de.body["prompt"];
    CHECK(full == rc.text);
    CHECK(rc.prompt_text + r.body["choices"][0]["text"].get<std::string>() == full);

    body["stream"] = true;
    auto s = c.Post("/v1/completions", body.dump(), "application/json");
    REQUIRE(s);
    Streamed st = read_stream(s->body);
    CHECK(st.ids[0] == want);
    CHECK(st.text[0] == r.body["choices"][0]["text"]);
    CHECK(st.usage.is_null());  // no include_usage
  }
}

TEST_CASE("n > 1 and several prompts give one choice each, indexed prompt-major, and usage adds up") {
  ServerProcess server({"-m", model_path("stories260K.bin")});
  auto c = server.client();
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  const auto p0 = parse_ids(cases[1].prompt_ids), p1 = parse_ids(cases[2].prompt_ids);
  const int max_tokens = 12;
  for (bool stream : {false, true}) {
    CAPTURE(stream);
    json body = {{"prompt", {p0, p1}}, {"n", 3}, {"max_tokens", max_tokens}, {"temperature", 0.8}, {"seed", 1234},
                 {"return_token_ids", true}, {"stream", stream}, {"stream_options", {{"include_usage", true}}}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    REQUIRE(r);
    REQUIRE_MESSAGE(r->status == 200, r->body);
    std::map<int, std::vector<int32_t>> ids;
    json usage;
    if (stream) {
      Streamed st = read_stream(r->body);
      ids = st.ids;
      usage = st.usage;
      for (int i = 0; i < 6; ++i) CHECK(st.finish[i] == "length");
    } else {
      json j = json::parse(r->body);
      REQUIRE(j["choices"].size() == 6);
      for (int i = 0; i < 6; ++i) {
        CHECK(j["choices"][i]["index"] == i);
        ids[i] = ints(j["choices"][i]["token_ids"]);
      }
      usage = j["usage"];
    }
    REQUIRE(ids.size() == 6);
    size_t generated = 0;
    for (auto& [i, v] : ids) {
      CHECK(v.size() == (size_t)max_tokens);
      generated += v.size();
    }
    CHECK(usage["prompt_tokens"] == p0.size() + p1.size());
    CHECK(usage["completion_tokens"] == generated);
    CHECK(usage["total_tokens"] == p0.size() + p1.size() + generated);
    // Sequence i samples with seed + i: the choices of one prompt differ.
    CHECK((ids[0] != ids[1] || ids[1] != ids[2]));
  }
}

TEST_CASE("a stop string ends the text before it, with finish_reason stop") {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf")});
  auto c = server.client();
  json body = {{"prompt", "Hello world"}, {"max_tokens", 32}, {"temperature", 0}, {"ignore_eos", true}};
  auto free_run = post_json(c, "/v1/completions", body.dump());
  REQUIRE(free_run.status == 200);
  const std::string text = free_run.body["choices"][0]["text"];
  REQUIRE(text.size() > 12);
  // A stop string from the middle of the greedy text.
  const std::string stop = text.substr(text.size() / 2, 3);
  const std::string before = text.substr(0, text.find(stop));
  for (bool stream : {false, true}) {
    CAPTURE(stream);
    body["stop"] = json::array({"never appears \x01", stop});
    body["stream"] = stream;
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    if (stream) {
      Streamed st = read_stream(r->body);
      CHECK(st.text[0] == before);
      CHECK(st.finish[0] == "stop");
    } else {
      json j = json::parse(r->body);
      CHECK(j["choices"][0]["text"] == before);
      CHECK(j["choices"][0]["finish_reason"] == "stop");
    }
  }
  body["stop"] = stop;  // a string alone
  body["stream"] = false;
  auto one = post_json(c, "/v1/completions", body.dump());
  CHECK(one.body["choices"][0]["text"] == before);
}

TEST_CASE("logprobs are log-probabilities of the chosen tokens, the greedy one the most probable") {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf")});
  auto c = server.client();
  json body = {{"prompt", "Hello world"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 3}, {"return_token_ids", true}};
  auto r = post_json(c, "/v1/completions", body.dump());
  REQUIRE_MESSAGE(r.status == 200, r.text);
  const json& lp = r.body["choices"][0]["logprobs"];
  REQUIRE(lp["tokens"].size() == 6);
  REQUIRE(lp["token_logprobs"].size() == 6);
  REQUIRE(lp["top_logprobs"].size() == 6);
  std::string joined;
  size_t offset = 0;
  for (size_t i = 0; i < 6; ++i) {
    const double chosen = lp["token_logprobs"][i];
    CHECK(chosen <= 0);
    CHECK(std::isfinite(chosen));
    REQUIRE(lp["top_logprobs"][i].size() >= 1);
    double best = -1e30;
    for (const auto& [tok, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    CHECK(chosen == doctest::Approx(best).epsilon(1e-6));  // greedy: the chosen is the most probable
    CHECK(lp["text_offset"][i] == offset);
    offset += lp["tokens"][i].get<std::string>().size();
    joined += lp["tokens"][i].get<std::string>();
  }
  CHECK(joined == r.body["choices"][0]["text"]);

  // Streamed: one logprobs entry a token, the same numbers.
  body["stream"] = true;
  auto s = c.Post("/v1/completions", body.dump(), "application/json");
  REQUIRE(s);
  std::vector<double> streamed;
  for (const json& ch : stream_chunks(s->body))
    if (!ch["choices"].empty() && !ch["choices"][0]["logprobs"].is_null())
      for (const auto& v : ch["choices"][0]["logprobs"]["token_logprobs"]) streamed.push_back(v);
  REQUIRE(streamed.size() == 6);
  for (size_t i = 0; i < 6; ++i) CHECK(streamed[i] == doctest::Approx(lp["token_logprobs"][i].get<double>()));
}

TEST_CASE("echo puts the prompt's text before the completion") {
  ServerProcess server({"-m", model_path("llama-2-tiny-random.gguf")});
  auto c = server.client();
  auto plain = post_json(c, "/v1/completions", json{{"prompt", "Hello world"}, {"max_tokens", 4}, {"temperature", 0}}.dump());
  auto echo = post_json(c, "/v1/completions", json{{"prompt", "Hello world"}, {"max_tokens", 4}, {"temperature", 0}, {"echo", true}}.dump());
  REQUIRE(echo.status == 200);
  CHECK(echo.body["choices"][0]["text"] == "Hello world" + plain.body["choices"][0]["text"].get<std::string>());
}
