// Speculative decoding from the command line: `run` with each method gives
// run.c's ids; `bench` and `bench serve` report each method's keys in one
// run; bad flags and a draft of another vocabulary are refused in one line.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

namespace {

void check_one_line_refusal(const std::vector<std::string>& args, const std::string& names) {
  const auto r = run_tessera(args);
  CHECK(r.exit_code != 0);
  const auto lines = r.err_lines();
  REQUIRE_MESSAGE(!lines.empty(), "no message");
  CHECK_MESSAGE(lines[0].find(names) != std::string::npos, lines[0]);
  CHECK_MESSAGE(lines.size() <= 2, r.err);
}

}  // namespace

TEST_CASE("run --lookup-ngram / --jacobi / --draft-model: every stories260K case gives run.c's ids") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  const std::vector<std::vector<std::string>> methods = {
      {"--lookup-ngram", "3"}, {"--jacobi", "5"}, {"--draft-model", shared_path("models/aidreams260K.bin"), "--spec-tokens", "3"}};
  for (const auto& m : methods) {
    CAPTURE(m[0]);
    for (size_t i = 0; i < cases.size(); i += 3) {
      std::vector<std::string> args = {"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", cases[i].prompt_ids,
                                       "--temp", "0", "-n", "200", "--print-ids"};
      args.insert(args.end(), m.begin(), m.end());
      const auto r = run_tessera(args);
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      CHECK(trim(r.out) == join_ids(cases[i].full_ids));
    }
  }
}

TEST_CASE("bench with --prompt-ids and every method prints tokens_per_pass, acceptance_rate and spec_speedup per method") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  const auto r = run_tessera({"bench", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", cases[1].prompt_ids, "--gen-tokens",
                              "60", "--lookup-ngram", "3", "--jacobi", "4", "--draft-model", shared_path("models/stories260K.bin"),
                              "--json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(trim(r.out));
  CHECK(j["identical"].get<bool>());
  REQUIRE(j["methods"].size() == 4);
  CHECK(j["methods"][0]["method"] == "none");
  for (const auto& m : j["methods"]) {
    for (const char* key : {"decode_tok_s", "tokens_per_pass", "acceptance_rate", "spec_speedup"}) REQUIRE_MESSAGE(m.contains(key), key);
    CHECK(m["tokens_per_pass"].get<double>() >= 1.0);
    CHECK(m["acceptance_rate"].get<double>() <= 1.0);
    CHECK(m["spec_speedup"].get<double>() > 0);
  }
  // The model drafting for itself: every greedy proposal it makes is the target's.
  CHECK(j["methods"][1]["method"] == "draft");  // draft, ngram, jacobi after the plain decode
  if (j["methods"][1]["proposed"].get<int>() > 0) CHECK(j["methods"][1]["acceptance_rate"].get<double>() == 1.0);
}

TEST_CASE("bench serve --lookup-ngram --json reports the speculative arms of one run") {
  const auto r = run_tessera({"bench", "serve", "-m", shared_path("models/stories260K.bin"), "--num-prompts", "6", "--input-len", "16",
                              "--output-len", "24", "--lookup-ngram", "2", "--json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(trim(r.out));
  REQUIRE(j.contains("speculative"));
  REQUIRE(j["speculative"].size() == 3);  // plain, ngram, plain again
  CHECK(j["speculative"][1]["method"] == "ngram");
  for (const char* key : {"tokens_per_pass", "acceptance_rate", "spec_speedup"}) CHECK(j["speculative"][1].contains(key));
}

TEST_CASE("speculative flags: two methods for one engine, a draft of another vocabulary, and bad counts are refused in one line") {
  const std::string m = shared_path("models/stories260K.bin");
  check_one_line_refusal({"run", "-m", m, "--prompt-ids", "1", "--lookup-ngram", "2", "--jacobi", "3"}, "--lookup-ngram");
  check_one_line_refusal({"run", "-m", m, "--prompt-ids", "1", "--draft-model", shared_path("models/llama-2-tiny-random.gguf")},
                         "--draft-model");
  check_one_line_refusal({"run", "-m", m, "--prompt-ids", "1", "--draft-model", "/nonexistent.gguf"}, "--draft-model");
  check_one_line_refusal({"run", "-m", m, "--prompt-ids", "1", "--lookup-ngram", "2", "--spec-tokens", "0"}, "--spec-tokens");
  check_one_line_refusal({"bench", "-m", m, "--concurrency", "2", "--lookup-ngram", "2"}, "--lookup-ngram");
  check_one_line_refusal({"bench", "-m", m, "--prompt-ids", "1,2"}, "--prompt-ids");
}
