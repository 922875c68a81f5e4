// Disaggregated serving as a user runs it: `tessera serve --role prefill`,
// `--role decode` and `--role router` as child processes on loopback (free
// ports), the prompt's KV crossing between the workers over UCX. Checked
// against run.c's ids and one colocated server; a decode worker killed
// mid-stream fails only its own requests; no KV block stays held.
#include <doctest/doctest.h>

#include <set>

#include "server/server_process.h"
#include "support/reference_cases.h"
#include "support/random.h"
#include "support/requirements.h"

using namespace tessera::testing;

namespace {

// The CLI's own answer: a build without UCX refuses the worker roles in one line.
const Requirement& ucx_cli() {
  static const Requirement r = [] {
    const CliResult c = run_tessera({"serve", "-m", model_path("stories260K.bin"), "--role", "decode", "--port", "1", "--kv-listen", "bad"});
    const bool without = c.err.find("built without UCX") != std::string::npos;
    return announce({"the disaggregated serving tests", without ? "tessera was built without UCX (install libucx-dev)" : ""});
  }();
  return r;
}

std::vector<std::string> worker_args(const std::string& role, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"-m", model_path("stories260K.bin"), "--role", role, "--kv-type", "f32", "--kv-timeout-ms", "5000"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

json request_body(const std::vector<int32_t>& prompt, size_t max_tokens, bool stream) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens},        {"temperature", 0}, {"return_token_ids", true},
          {"stream", stream}, {"stop_token_ids", json::array({1})}, {"ignore_eos", true}};
}

// The ids of a completion, streamed or not; an "error" when it failed.
struct Completion {
  std::vector<int32_t> ids;
  std::string error;
  std::string decode_worker;
};

Completion complete(httplib::Client& c, const json& body) {
  Completion out;
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  if (!r) {
    out.error = "no answer: " + httplib::to_string(r.error());
    return out;
  }
  out.decode_worker = r->get_header_value("X-Tessera-Decode");
  if (r->status != 200) {
    out.error = "status " + std::to_string(r->status) + ": " + r->body;
    return out;
  }
  if (!body.value("stream", false)) {
    json j = json::parse(r->body);
    out.ids = ints(j["choices"][0]["token_ids"]);
    return out;
  }
  for (const std::string& ev : sse_payloads(r->body)) {
    if (ev == "[DONE]") break;
    json j = json::parse(ev, nullptr, false);
    if (j.is_discarded()) {
      out.error = "not JSON: " + ev;
      break;
    }
    if (j.contains("error")) {
      out.error = j["error"].value("message", ev);
      break;
    }
    const json& ch = j["choices"][0];
    if (ch.contains("token_ids"))
      for (const auto& t : ch["token_ids"]) out.ids.push_back(t.get<int32_t>());
  }
  return out;
}

// A completion's choices[0].logprobs (tokens, token_logprobs, top_logprobs),
// the stream's chunks joined.
json completion_logprobs(httplib::Client& c, const json& body) {
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  REQUIRE(r);
  REQUIRE_MESSAGE(r->status == 200, r->body);
  if (!body.value("stream", false)) return json::parse(r->body)["choices"][0]["logprobs"];
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()}};
  for (const std::string& ev : sse_payloads(r->body)) {
    if (ev == "[DONE]") break;
    const json j = json::parse(ev);
    const json& lp = j["choices"][0]["logprobs"];
    if (!lp.is_object()) continue;
    for (const char* k : {"tokens", "token_logprobs", "top_logprobs"})
      for (const auto& v : lp[k]) out[k].push_back(v);
  }
  return out;
}

// Each choice's token ids, by choice index, the stream's chunks joined.
std::vector<std::vector<int32_t>> choice_ids(httplib::Client& c, const json& body) {
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  REQUIRE(r);
  REQUIRE_MESSAGE(r->status == 200, r->body);
  std::vector<std::vector<int32_t>> out((size_t)body.value("n", 1));
  auto take = [&](const json& choices) {
    for (const json& ch : choices)
      if (ch.contains("token_ids"))
        for (const auto& t : ch["token_ids"]) out.at(ch["index"].get<size_t>()).push_back(t.get<int32_t>());
  };
  if (!body.value("stream", false)) {
    take(json::parse(r->body)["choices"]);
    return out;
  }
  for (const std::string& ev : sse_payloads(r->body)) {
    if (ev == "[DONE]") break;
    take(json::parse(ev)["choices"]);
  }
  return out;
}

// Every body posted to `router` at once, each from its own client thread; got[i] its answer once joined.
std::vector<std::thread> post_all(const ServerProcess& router, const std::vector<json>& bodies, std::vector<Completion>& got) {
  std::vector<std::thread> clients;
  for (size_t i = 0; i < bodies.size(); ++i)
    clients.emplace_back([&, i] {
      auto c = router.client();
      got[i] = complete(c, bodies[i]);
    });
  return clients;
}

// Returns once `worker` reports a running sequence (or after about 2 s).
void wait_until_running(const ServerProcess& worker) {
  auto c = worker.client();
  for (int i = 0; i < 2000; ++i) {
    auto r = c.Get("/load");
    if (r && json::parse(r->body)["running"].get<int>() > 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Waits until the worker holds no KV block and runs nothing (the engine
// frees a finished request's blocks after its step).
void require_no_blocks_held(const ServerProcess& w) {
  auto c = w.client();
  json j;
  for (int i = 0; i < 200; ++i) {
    auto r = c.Get("/load");
    REQUIRE(r);
    j = json::parse(r->body);
    if (j["kv_blocks_used"] == 0 && j["running"] == 0 && j["waiting"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_MESSAGE(j["kv_blocks_used"] == 0, j.dump());
  CHECK(j["running"] == 0);
}

}  // namespace

TEST_CASE("disagg serve: 1 prefill + 1 decode behind a router give run.c's ids and the colocated server's for every reference prompt" *
          needs(ucx_cli())) {
  ServerProcess decode(worker_args("decode"));
  ServerProcess prefill(worker_args("prefill", {"--max-prefill-chunk", "7"}));
  ServerProcess router({"--role", "router", "--prefill", prefill.url(), "--decode", decode.url()});
  ServerProcess colocated({"-m", model_path("stories260K.bin"), "--kv-type", "f32"});
  auto rc = router.client();
  auto cc = colocated.client();
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  for (const auto& gc : cases) {
    const auto prompt = parse_ids(gc.prompt_ids);
    const std::vector<int32_t> want(gc.full_ids.begin() + (long)prompt.size(), gc.full_ids.end());
    CAPTURE(gc.prompt_ids);
    for (bool stream : {false, true}) {
      CAPTURE(stream);
      const json body = request_body(prompt, 201 - prompt.size(), stream);
      const Completion d = complete(rc, body);
      REQUIRE_MESSAGE(d.error.empty(), d.error);
      CHECK(d.decode_worker == decode.url());
      CHECK(d.ids == want);
      const Completion c = complete(cc, body);
      REQUIRE(c.error.empty());
      CHECK(d.ids == c.ids);
    }
  }
  // Requests at once from several clients: each still its own ids.
  std::vector<std::thread> clients;
  std::vector<Completion> got(cases.size());
  for (size_t i = 0; i < cases.size(); ++i)
    clients.emplace_back([&, i] {
      auto c = router.client();
      const auto prompt = parse_ids(cases[i].prompt_ids);
      got[i] = complete(c, request_body(prompt, 201 - prompt.size(), i % 2 == 0));
    });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    const auto prompt = parse_ids(cases[i].prompt_ids);
    CHECK(got[i].error == "");
    CHECK(got[i].ids == std::vector<int32_t>(cases[i].full_ids.begin() + (long)prompt.size(), cases[i].full_ids.end()));
  }
  // Logprobs cross the split (the first token's from the prefill worker, in
  // the KV transfer's commit): the router's answer carries the colocated
  // server's, streamed or not.
  for (bool stream : {false, true}) {
    CAPTURE(stream);
    json body = request_body(parse_ids(cases[0].prompt_ids), 12, stream);
    body["logprobs"] = 3;
    const json d = completion_logprobs(rc, body), c = completion_logprobs(cc, body);
    REQUIRE(d["token_logprobs"].size() == 12);
    REQUIRE(c["token_logprobs"].size() == 12);
    for (size_t t = 0; t < 12; ++t) {
      CAPTURE(t);
      CHECK(std::fabs(d["token_logprobs"][t].get<double>() - c["token_logprobs"][t].get<double>()) <= 1e-4);
      REQUIRE(d["top_logprobs"][t].size() == 3);
      for (const auto& [token, lp] : c["top_logprobs"][t].items()) {
        REQUIRE(d["top_logprobs"][t].contains(token));
        CHECK(std::fabs(d["top_logprobs"][t][token].get<double>() - lp.get<double>()) <= 1e-4);
      }
    }
    CHECK(d["tokens"] == c["tokens"]);
  }
  // n sampled choices cross the split too (the decode worker forks the
  // imported prompt; each choice continues from its own first token).
  for (bool stream : {false, true}) {
    CAPTURE(stream);
    json body = request_body(parse_ids(cases[1].prompt_ids), 20, stream);
    body["n"] = 3;
    body["temperature"] = 1.0;
    body["seed"] = 77;
    const std::vector<std::vector<int32_t>> d = choice_ids(rc, body), c = choice_ids(cc, body);
    REQUIRE(d.size() == 3);
    CHECK(d == c);
    CHECK((d[0] != d[1] || d[1] != d[2]));
  }
  require_no_blocks_held(prefill);
  require_no_blocks_held(decode);
  auto load = json::parse(decode.client().Get("/load")->body);
  CHECK(load["kv_pending_transfers"] == 0);
  // The CPU prefill worker said it ships layer by layer, and shipped every
  // pool while its steps ran.
  CHECK(prefill.stderr_text().find("prefill worker: ships KV over UCX, layer by layer as each step writes it") != std::string::npos);
  const std::string metrics = prefill.client().Get("/metrics")->body;
  CHECK(metrics.find("tessera:kv_export_pools_total{when=\"after_step\"} 0\n") != std::string::npos);
  CHECK(metrics.find("tessera:kv_export_pools_total{when=\"during_step\"} 0\n") == std::string::npos);
  CHECK(metrics.find("tessera:kv_export_pools_total{when=\"during_step\"} ") != std::string::npos);
}

TEST_CASE("disagg serve: a decode worker killed mid-stream fails its own requests with an error, the others stay correct, no KV leaks" *
          needs(ucx_cli())) {
  // Two sequences at a time per decode worker, so sixteen 400-token streams
  // take long enough to kill one worker while some of its streams run.
  ServerProcess d1(worker_args("decode", {"--max-num-seqs", "2"}));
  ServerProcess d2(worker_args("decode", {"--max-num-seqs", "2"}));
  ServerProcess prefill(worker_args("prefill"));
  ServerProcess router({"--role", "router", "--prefill", prefill.url(), "--decode", d1.url() + "," + d2.url()});
  ServerProcess colocated({"-m", model_path("stories260K.bin"), "--kv-type", "f32"});
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  auto cc = colocated.client();
  const int n = 16;
  std::vector<json> bodies;
  std::vector<std::vector<int32_t>> want;
  for (int i = 0; i < n; ++i) {
    const auto prompt = parse_ids(cases[(size_t)i % cases.size()].prompt_ids);
    bodies.push_back(request_body(prompt, 400, true));
    const Completion c = complete(cc, bodies.back());
    REQUIRE(c.error.empty());
    want.push_back(c.ids);
  }
  std::vector<Completion> got(n);
  std::vector<std::thread> clients = post_all(router, bodies, got);
  // Kill d1 once it is decoding.
  wait_until_running(d1);
  const pid_t victim = d1.pid();
  REQUIRE(victim > 0);
  kill(victim, SIGKILL);
  for (auto& t : clients) t.join();
  int failed = 0, on_d2 = 0;
  for (int i = 0; i < n; ++i) {
    CAPTURE(i);
    const Completion& g = got[(size_t)i];
    if (!g.error.empty()) {
      // Only the killed worker's requests may fail, and they say so.
      ++failed;
      CHECK(g.decode_worker == d1.url());
      MESSAGE(g.error);
      CHECK(g.error.find(d1.url()) != std::string::npos);
      continue;
    }
    // Every request that did not fail is exactly right, wherever it ran.
    CHECK(g.ids == want[(size_t)i]);
    on_d2 += g.decode_worker == d2.url();
  }
  CHECK(failed >= 1);
  CHECK(on_d2 >= 1);
  // After the kill the router sends everything to the decode worker left.
  for (int i = 0; i < 3; ++i) {
    auto c = router.client();
    const Completion g = complete(c, bodies[(size_t)i]);
    REQUIRE_MESSAGE(g.error.empty(), g.error);
    CHECK(g.decode_worker == d2.url());
    CHECK(g.ids == want[(size_t)i]);
  }
  require_no_blocks_held(prefill);
  require_no_blocks_held(d2);
}

TEST_CASE("disagg serve: wrong role flags are refused in one line naming the flag") {
  struct Bad {
    std::vector<std::string> args;
    std::string line;
  };
  const std::string m = model_path("stories260K.bin");
  for (const Bad& b : std::vector<Bad>{
           {{"--role", "worker", "-m", m}, "tessera: --role: 'worker' not in {prefill,decode,router}"},
           {{"--role", "router", "--decode", "http://127.0.0.1:9"}, "tessera: --prefill: --role router needs at least one prefill worker URL"},
           {{"--role", "router", "--prefill", "http://127.0.0.1:9"}, "tessera: --decode: --role router needs at least one decode worker URL"},
           {{"--role", "router", "--prefill", "127.0.0.1:9", "--decode", "http://127.0.0.1:8"},
            "tessera: --prefill: '127.0.0.1:9' is not an http://HOST:PORT URL"},
           {{"--role", "router", "-m", m, "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:8"},
            "tessera: -m: --role router serves no model itself (its workers do)"},
           {{"-m", m, "--kv-listen", "127.0.0.1:0"}, "tessera: --kv-listen: only with --role decode"},
           {{"-m", m, "--prefill", "http://127.0.0.1:9"}, "tessera: --prefill: only with --role router"},
           {{"--role", "decode"}, "tessera: -m: required (a model file, or synthetic[:TYPE])"},
           {{"--role", "decode", "-m", m, "--tensor-parallel", "2"},
            "tessera: --role decode: not with --tensor-parallel or --pipeline-parallel (each rank holds part of the KV cache)"},
           {{"--role", "router", "--colocated", "http://127.0.0.1:7", "--prefill", "http://127.0.0.1:9"},
            "tessera: --colocated: not with --prefill or --decode (a router serves one way)"},
       }) {
    std::vector<std::string> args = {"serve", "--port", "0"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    const CliResult r = run_tessera(args);
    CAPTURE(b.line);
    CHECK(r.exit_code != 0);
    const auto lines = r.err_lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == b.line);
  }
}

TEST_CASE("disagg serve: a decode worker's --kv-listen that cannot be bound fails at start in one line" * needs(ucx_cli())) {
  const CliResult r = run_tessera({"serve", "--port", "0", "-m", model_path("stories260K.bin"), "--role", "decode", "--kv-listen", "127.0.0.1:x1"});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("tessera: --kv-listen: port 'x1' is not a number in [0, 65535]") != std::string::npos);
}

TEST_CASE("disagg serve: a prefill worker killed mid-prefill fails its own requests with an error naming it, the others stay correct" *
          needs(ucx_cli())) {
  // One prompt token a step: a 300-token prompt is 300 steps of prefill, so
  // the kill lands while prompts are being computed and shipped.
  ServerProcess p1(worker_args("prefill", {"--max-prefill-chunk", "1", "--max-num-seqs", "2"}));
  ServerProcess p2(worker_args("prefill", {"--max-prefill-chunk", "1", "--max-num-seqs", "2"}));
  ServerProcess decode(worker_args("decode"));
  ServerProcess router({"--role", "router", "--prefill", p1.url() + "," + p2.url(), "--decode", decode.url()});
  ServerProcess colocated({"-m", model_path("stories260K.bin"), "--kv-type", "f32"});
  auto cc = colocated.client();
  Rng rng(11);
  const int n = 8;
  std::vector<json> bodies;
  std::vector<std::vector<int32_t>> want;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> prompt = {1};
    for (int t = 0; t < 300; ++t) prompt.push_back(rng.integer(2, 511));
    bodies.push_back(request_body(prompt, 40, i % 2 == 1));
    const Completion c = complete(cc, bodies.back());
    REQUIRE(c.error.empty());
    want.push_back(c.ids);
  }
  std::vector<Completion> got(n);
  std::vector<std::thread> clients = post_all(router, bodies, got);
  wait_until_running(p1);
  kill(p1.pid(), SIGKILL);
  for (auto& t : clients) t.join();
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    CAPTURE(i);
    const Completion& g = got[(size_t)i];
    if (!g.error.empty()) {
      ++failed;
      MESSAGE(g.error);
      CHECK(g.error.find(p1.url()) != std::string::npos);
      continue;
    }
    CHECK(g.ids == want[(size_t)i]);
  }
  CHECK(failed >= 1);
  CHECK(failed < n);
  require_no_blocks_held(decode);
  require_no_blocks_held(p2);
}

TEST_CASE("disagg serve: a router over colocated workers (the baseline bench serve compares with) spreads requests and gives run.c's ids") {
  ServerProcess w1({"-m", model_path("stories260K.bin"), "--kv-type", "f32"});
  ServerProcess w2({"-m", model_path("stories260K.bin"), "--kv-type", "f32"});
  ServerProcess router({"--role", "router", "--colocated", w1.url() + "," + w2.url()});
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  std::vector<std::thread> clients;
  std::vector<Completion> got(2 * cases.size());
  for (size_t i = 0; i < got.size(); ++i)
    clients.emplace_back([&, i] {
      auto c = router.client();
      const auto prompt = parse_ids(cases[i % cases.size()].prompt_ids);
      got[i] = complete(c, request_body(prompt, 201 - prompt.size(), i % 2 == 0));
    });
  for (auto& t : clients) t.join();
  std::set<std::string> used;
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    const auto& gc = cases[i % cases.size()];
    const auto prompt = parse_ids(gc.prompt_ids);
    CHECK(got[i].error == "");
    CHECK(got[i].ids == std::vector<int32_t>(gc.full_ids.begin() + (long)prompt.size(), gc.full_ids.end()));
    used.insert(got[i].decode_worker);
  }
  CHECK(used.size() == 2);
}

TEST_CASE("disagg serve: text prompts, encoded by each worker alike, give run.c's ids and text (llama-2-tiny-random, aidreams260K)" *
          needs(ucx_cli())) {
  struct Model {
    std::vector<std::string> args;
    std::string reference;
  };
  for (const Model& m : {Model{{"-m", model_path("llama-2-tiny-random.gguf")}, "reference/llama-2-tiny-random.greedy.tsv"},
                         Model{{"-m", model_path("aidreams260K.bin"), "-z", model_path("aidreams260K.tok512.bin")},
                               "reference/aidreams260K.greedy.tsv"}}) {
    CAPTURE(m.reference);
    auto with = [&](std::vector<std::string> more) {
      std::vector<std::string> a = m.args;
      a.insert(a.end(), {"--kv-type", "f32"});
      a.insert(a.end(), more.begin(), more.end());
      return a;
    };
    ServerProcess decode(with({"--role", "decode"}));
    ServerProcess prefill(with({"--role", "prefill", "--max-prefill-chunk", "5"}));
    ServerProcess router({"--role", "router", "--prefill", prefill.url(), "--decode", decode.url()});
    auto rc = router.client();
    auto dc = decode.client();
    const auto cases = read_text_cases(shared_path(m.reference));
    REQUIRE(!cases.empty());
    for (const auto& gc : cases) {
      CAPTURE(gc.prompt_text);
      auto tok = post_json(dc, "/tokenize", json{{"prompt", gc.prompt_text}}.dump());
      REQUIRE(tok.status == 200);
      const auto prompt = ints(tok.body["tokens"]);
      const std::vector<int32_t> want(gc.full_ids.begin() + (long)prompt.size(), gc.full_ids.end());
      json body = {{"prompt", gc.prompt_text}, {"max_tokens", want.size()}, {"temperature", 0}, {"return_token_ids", true},
                   {"ignore_eos", true}, {"stop_token_ids", {1}}};
      auto r = post_json(rc, "/v1/completions", body.dump());
      REQUIRE_MESSAGE(r.status == 200, r.text);
      CHECK(ints(r.body["choices"][0]["token_ids"]) == want);
      CHECK(gc.prompt_text + r.body["choices"][0]["text"].get<std::string>() == gc.text);
    }
    require_no_blocks_held(prefill);
    require_no_blocks_held(decode);
  }
}
