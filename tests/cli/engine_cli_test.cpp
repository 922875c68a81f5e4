// tessera run with many prompts at once, and tessera bench's serving
// measurements, as a user runs them.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("run --prompt-ids-file: every prompt at once, one ids line each in input order, each run.c's") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  std::string file;
  for (const auto& c : cases) file += c.prompt_ids + "\n";
  const auto r = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids-file", write_file("ids.txt", file),
                              "--temp", "0", "-n", "200", "--print-ids"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto out = lines_of(r.out);
  REQUIRE(out.size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) CHECK(out[i] == join_ids(cases[i].full_ids));
  CHECK(r.err.find("kv cache: ") != std::string::npos);  // the engine says what its cache holds
}

TEST_CASE("run --prompts-file: text prompts at once, one JSON string of run.c's text each, in order") {
  const auto cases = read_text_cases(shared_path("reference/aidreams260K.greedy.tsv"));
  std::string file;
  for (const auto& c : cases) file += c.prompt_text + "\n";
  const auto r = run_tessera({"run", "-m", shared_path("models/aidreams260K.bin"), "-z", shared_path("models/aidreams260K.tok512.bin"),
                              "--prompts-file", write_file("prompts.txt", file), "--temp", "0", "-n", "128", "--max-num-seqs", "3"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto out = lines_of(r.out);
  REQUIRE(out.size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    const auto text = nlohmann::json::parse(out[i]).get<std::string>();
    CHECK(text == cases[i].text);
  }
}

TEST_CASE("run --prompt-ids-file refuses a bad line naming the file, line and element") {
  const std::string path = write_file("bad_ids.txt", "1,2,3\n1,x,4\n");
  const auto r = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids-file", path, "--print-ids"});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find(path + ":2") != std::string::npos);
  CHECK(r.err.find("'x'") != std::string::npos);
  const auto big = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids-file",
                                write_file("oov.txt", "1,2\n1,9999\n"), "--print-ids"});
  CHECK(big.exit_code != 0);
  CHECK(big.err.find("prompt 2") != std::string::npos);
  CHECK(big.err.find("9999") != std::string::npos);
  const auto missing = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids-file", "/nonexistent/x", "--print-ids"});
  CHECK(missing.exit_code != 0);
}

TEST_CASE("run --kv-cache-memory below one whole-context sequence is refused in one line at open") {
  const auto r = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1", "--kv-cache-memory", "1000", "--print-ids"});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("--kv-cache-memory") != std::string::npos);
  CHECK(lines_of(r.err).size() == 1);
}

TEST_CASE("bench --concurrency --prefix-tokens --json prints the serving keys") {
  const auto r = run_tessera({"bench", "-m", shared_path("models/stories260K.bin"), "--concurrency", "4", "--prompt-tokens", "8",
                              "--gen-tokens", "8", "--prefix-tokens", "64", "--json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"concurrency", "aggregate_decode_tok_s", "requests_per_s", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                          "tpot_p99_ms", "kv_peak_blocks", "ttft_cached_ms", "ttft_cold_ms", "single_decode_tok_s", "host_fraction"}) {
    CAPTURE(key);
    CHECK(j.contains(key));
  }
  CHECK(j["concurrency"] == 4);
  CHECK(j["aggregate_decode_tok_s"].get<double>() > 0);
  CHECK(j["kv_peak_blocks"].get<int>() > 0);
  CHECK(j["ttft_cached_ms"].get<double>() > 0);
}
