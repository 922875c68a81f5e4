// tessera batch: the OpenAI Batch format through the engine. Every line is
// answered exactly once (greedy completions equal run.c's ids; bad lines
// get their error lines), and a run killed with SIGKILL at random moments,
// several times, then resumed, ends with the same answers, one a custom_id.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "support/cli.h"
#include "support/random.h"
#include "support/reference_cases.h"

using namespace tessera::testing;
using json = nlohmann::json;

namespace {

std::vector<int32_t> ids_of(const std::string& text) {
  std::vector<int32_t> v;
  std::stringstream ss(text);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(std::stoi(t));
  return v;
}

std::vector<json> lines_of(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

std::string write_lines(const std::string& name, const std::vector<json>& lines) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream out(path);
  for (const json& j : lines) out << j.dump() << "\n";
  return path;
}

json request_line(const std::string& id, const std::string& url, json body) {
  return {{"custom_id", id}, {"method", "POST"}, {"url", url}, {"body", std::move(body)}};
}

// Starts tessera with args, kills it with SIGKILL after `after`; true if it
// was still running then (false: it had finished).
bool run_and_kill(const std::vector<std::string>& args, std::chrono::milliseconds after) {
  std::fflush(stdout);  // else the child's freopen writes the parent's buffered output again
  std::fflush(stderr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> argv;
    std::string bin = TESSERA_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + after;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return true;
}

// The stories260K greedy cases as batch lines (ids back in "token_ids").
std::vector<json> greedy_lines(std::map<std::string, std::vector<int32_t>>* want, int copies) {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  std::vector<json> lines;
  for (int c = 0; c < copies; ++c)
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto prompt = ids_of(cases[i].prompt_ids);
      const std::vector<int32_t> gen(cases[i].full_ids.begin() + (long)prompt.size(), cases[i].full_ids.end());
      const std::string id = "req-" + std::to_string(c) + "-" + std::to_string(i);
      (*want)[id] = gen;
      lines.push_back(request_line(id, "/v1/completions",
                                   {{"model", "any"}, {"prompt", prompt}, {"max_tokens", gen.size()}, {"temperature", 0}, {"return_token_ids", true}}));
    }
  return lines;
}

std::vector<int32_t> ints(const json& a) { return a.get<std::vector<int32_t>>(); }

}  // namespace

TEST_CASE("batch answers each line once: greedy completions equal run.c's, refused lines say why under their custom_id or line") {
  std::map<std::string, std::vector<int32_t>> want;
  std::vector<json> lines = greedy_lines(&want, 1);
  lines.push_back(request_line("chat-1", "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}));
  lines.push_back(request_line("bad-url", "/v1/embeddings", {{"input", "x"}}));
  lines.push_back(request_line("bad-temp", "/v1/completions", {{"prompt", {1, 2}}, {"temperature", "hot"}}));
  const std::string in = write_lines("batch_in.jsonl", lines);
  {
    std::ofstream app(in, std::ios::app);
    app << "{not json\n";  // line lines.size() + 1: no custom_id
  }
  const std::string out = temp_dir() + "/batch_out.jsonl";
  std::remove(out.c_str());
  const auto r = run_tessera({"batch", "-m", shared_path("models/stories260K.bin"), in, "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::map<std::string, json> got;
  for (const json& j : lines_of(out)) {
    const std::string key = j["custom_id"].is_null() ? "#" + std::to_string(j["line"].get<int>()) : j["custom_id"].get<std::string>();
    CHECK_MESSAGE(!got.count(key), "two answers for " << key);
    got[key] = j;
  }
  CHECK(got.size() == lines.size() + 1);
  for (const auto& [id, gen] : want) {
    CAPTURE(id);
    REQUIRE(got.count(id));
    const json& resp = got[id]["response"];
    CHECK(resp["status_code"] == 200);
    CHECK(ints(resp["body"]["choices"][0]["token_ids"]) == gen);
    CHECK(resp["body"]["usage"]["completion_tokens"] == gen.size());
    CHECK(got[id]["error"].is_null());
  }
  CHECK(got["chat-1"]["response"]["status_code"] == 400);  // stories260K has no chat template
  CHECK(got["chat-1"]["response"]["body"]["error"]["message"].get<std::string>().find("template") != std::string::npos);
  CHECK(got["bad-url"]["error"]["message"].get<std::string>().find("'url'") != std::string::npos);
  CHECK(got["bad-temp"]["response"]["status_code"] == 400);
  CHECK(got["bad-temp"]["response"]["body"]["error"]["param"] == "temperature");
  const std::string last = "#" + std::to_string(lines.size() + 1);
  REQUIRE(got.count(last));
  CHECK(got[last]["error"]["message"].get<std::string>().find("not valid JSON") != std::string::npos);
  CHECK(r.err.find("batch: ") != std::string::npos);  // the progress lines (stderr is not a terminal)

  // Run again on the finished output: nothing to do, nothing added.
  const auto again = run_tessera({"batch", "-m", shared_path("models/stories260K.bin"), in, "-o", out});
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  CHECK(lines_of(out).size() == lines.size() + 1);
}

TEST_CASE("batch killed with SIGKILL at random moments and resumed ends with one answer a custom_id, each the same as run.c's") {
  std::map<std::string, std::vector<int32_t>> want;
  const std::vector<json> lines = greedy_lines(&want, 8);
  const std::string in = write_lines("resume_in.jsonl", lines);
  const std::string out = temp_dir() + "/resume_out.jsonl";
  std::remove(out.c_str());
  const std::vector<std::string> args = {"batch", "-m", shared_path("models/stories260K.bin"), in, "-o", out, "--max-in-flight", "4"};
  Rng rng(7);
  MESSAGE("kill delays drawn from the test seed (TESSERA_TEST_SEED replays)");
  int kills = 0;
  for (int round = 0; round < 6; ++round) {
    if (run_and_kill(args, std::chrono::milliseconds(rng.integer(20, 400)))) ++kills;
    // A torn tail now and then, as a kill in the middle of a write leaves.
    if (round == 2) std::ofstream(out, std::ios::app) << "{\"id\": \"batch_req_9\", \"custom_id\": \"req-";
  }
  const auto r = run_tessera(args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::map<std::string, int> seen;
  for (const json& j : lines_of(out)) {
    const std::string id = j["custom_id"].get<std::string>();
    ++seen[id];
    REQUIRE(want.count(id));
    CHECK(ints(j["response"]["body"]["choices"][0]["token_ids"]) == want[id]);
  }
  CHECK(seen.size() == want.size());
  for (const auto& [id, n] : seen) CHECK_MESSAGE(n == 1, id << " answered " << n << " times");
  MESSAGE(kills << " of 6 runs were killed before they finished");
}

TEST_CASE("batch refuses a file it cannot use in one line naming it") {
  const std::string dup = write_lines("dup.jsonl", {request_line("a", "/v1/completions", {{"prompt", {1}}}),
                                                    request_line("a", "/v1/completions", {{"prompt", {1}}})});
  auto r = run_tessera({"batch", "-m", shared_path("models/stories260K.bin"), dup, "-o", temp_dir() + "/dup_out.jsonl"});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find(dup + ":2") != std::string::npos);
  r = run_tessera({"batch", "-m", shared_path("models/stories260K.bin"), "/nonexistent/in.jsonl", "-o", temp_dir() + "/x.jsonl"});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("/nonexistent/in.jsonl") != std::string::npos);
  const std::string one = write_lines("one.jsonl", {request_line("a", "/v1/completions", {{"prompt", {1}}, {"max_tokens", 2}})});
  const std::string foreign = temp_dir() + "/foreign.jsonl";
  std::ofstream(foreign) << "{\"hello\": 1}\n";
  r = run_tessera({"batch", "-m", shared_path("models/stories260K.bin"), one, "-o", foreign});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find(foreign + ":1") != std::string::npos);
}
