// tessera bench serve, the load generator, on the in-process engine: the
// report's counts follow from what it was asked to send (EOS is ignored, so
// every request decodes its output length), goodput from the targets, the
// percentiles are ordered, the plot is an SVG of four CDFs, and bad flags
// and dataset lines are refused in one line naming them.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli.h"

using namespace tessera::testing;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string at_line(const std::string& path, int line) { return path + ":" + std::to_string(line); }

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

void check_ordered(const nlohmann::json& stats) {
  CHECK(stats["median"].get<double>() <= stats["p90"].get<double>());
  CHECK(stats["p90"].get<double>() <= stats["p99"].get<double>());
  CHECK(stats["mean"].get<double>() > 0);
}

std::vector<std::string> bench_serve(std::vector<std::string> extra) {
  std::vector<std::string> args = {"bench", "serve", "-m", shared_path("models/stories260K.bin"), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("bench serve: every request completes with its output length, and goodput counts the requests within the targets") {
  for (const char* schedule : {"fcfs", "slo"}) {
    CAPTURE(schedule);
    const std::string plot = temp_dir() + "/cdf_" + schedule + ".svg";
    const auto r = run_tessera(bench_serve({"--num-prompts", "12", "--input-len", "4:20", "--output-len", "7", "--request-rate", "40",
                                            "--seed", "5", "--goodput", "ttft:600000", "tpot:600000", "--plot", plot, "--schedule",
                                            schedule, "--slo-ttft-ms", "600000", "--slo-tpot-ms", "600000"}));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["completed"] == 12);
    CHECK(j["failed"] == 0);
    CHECK(j["output_tokens"] == 12 * 7);
    CHECK(j["input_tokens"].get<int>() >= 12 * 4);
    CHECK(j["input_tokens"].get<int>() <= 12 * 20);
    CHECK(j["good_requests"] == 12);
    CHECK(j["goodput"].get<double>() == doctest::Approx(j["request_throughput"].get<double>()));
    CHECK(j["output_throughput"].get<double>() == doctest::Approx(84 / j["duration_s"].get<double>()));
    for (const char* k : {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"}) {
      CAPTURE(k);
      check_ordered(j[k]);
    }
    CHECK(j["e2el_ms"]["median"].get<double>() >= j["ttft_ms"]["median"].get<double>());
    CHECK(r.err.find("seed 5") != std::string::npos);
    const std::string svg = read_file(plot);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(count_of(svg, "<polyline") == 4);
  }
}

TEST_CASE("bench serve: a target no request can meet gives goodput 0, and the text report names every figure") {
  const auto r = run_tessera(bench_serve({"--num-prompts", "4", "--input-len", "6", "--output-len", "3", "--goodput", "ttft:0.001"}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["good_requests"] == 0);
  CHECK(j["goodput"].get<double>() == 0);
  CHECK(j["request_rate"] == "inf");
  std::vector<std::string> args = bench_serve({"--num-prompts", "4", "--input-len", "6", "--output-len", "3", "--goodput", "e2el:1e7"});
  args.erase(args.begin() + 4);  // no --json
  const auto text = run_tessera(args);
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  for (const char* k : {"request throughput", "output throughput", "goodput", "TTFT", "TPOT", "ITL", "E2EL", "4 of 4 requests"}) {
    CAPTURE(k);
    CHECK(text.out.find(k) != std::string::npos);
  }
}

TEST_CASE("bench serve --dataset: each line's prompt ids or input length and its output length, taken in turn") {
  const std::string path = write_file("load.jsonl", "{\"prompt\": [1, 5, 9, 30], \"output_len\": 5}\n\n{\"input_len\": 10, \"output_len\": 2}\n");
  const auto r = run_tessera(bench_serve({"--num-prompts", "4", "--dataset", path}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["completed"] == 4);
  CHECK(j["output_tokens"] == 5 + 2 + 5 + 2);
  CHECK(j["input_tokens"] == 4 + 10 + 4 + 10);
}

TEST_CASE("bench serve refuses bad flags and dataset lines in one line naming them") {
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::string bad_line = write_file("bad.jsonl", "{\"input_len\": 4, \"output_len\": 2}\n{\"prompt\": 7, \"output_len\": 2}\n");
  const std::string no_output = write_file("no_out.jsonl", "{\"input_len\": 4}\n");
  const std::vector<Case> cases = {
      {{"--input-len", "0"}, "--input-len"},
      {{"--output-len", "9:3"}, "--output-len"},
      {{"--request-rate", "-2"}, "--request-rate"},
      {{"--request-rate", "fast"}, "--request-rate"},
      {{"--goodput", "ttft"}, "--goodput"},
      {{"--goodput", "latency:5"}, "--goodput"},
      {{"--dataset", bad_line}, at_line(bad_line, 2)},
      {{"--dataset", no_output}, at_line(no_output, 1)},
      {{"--dataset", "/nonexistent/load.jsonl"}, "/nonexistent/load.jsonl"},
      {{"--schedule", "slo"}, "--slo-ttft-ms"},
      {{"--url", "ftp://example"}, "--url"},
      {{"--url", "http://127.0.0.1:1"}, "127.0.0.1:1"},
      {{"--input-len", "5000", "--output-len", "5000"}, "context"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.names);
    const auto r = run_tessera(bench_serve(c.args));
    CHECK(r.exit_code != 0);
    CHECK(r.err.find(c.names) != std::string::npos);
    CHECK(r.err.find("tessera: ") != std::string::npos);
  }
}

TEST_CASE("bench serve --long-prompts: the share of long prompts is drawn per request, and the short and the long are reported apart") {
  const auto r = run_tessera(bench_serve({"--num-prompts", "16", "--input-len", "8", "--long-prompts", "0.5:200", "--output-len", "3",
                                          "--seed", "9"}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["completed"] == 16);
  const int longs = j["long_completed"].get<int>();
  CHECK(longs >= 1);
  CHECK(longs <= 15);
  // Every prompt is exactly 8 or 200 tokens: the input count says how many of each.
  CHECK(j["input_tokens"].get<int>() == longs * 200 + (16 - longs) * 8);
  for (const char* k : {"ttft_short_ms", "ttft_long_ms", "tpot_short_ms", "tpot_long_ms"}) {
    CAPTURE(k);
    check_ordered(j[k]);
  }
  // Refused in one line naming the flag.
  for (const char* bad : {"1.5:100", "0.5", "x:100", "0.5:0"}) {
    const auto b = run_tessera(bench_serve({"--num-prompts", "2", "--long-prompts", bad}));
    CAPTURE(bad);
    CHECK(b.exit_code != 0);
    CHECK(b.err.find("--long-prompts") != std::string::npos);
    CHECK(b.err_lines().size() == 1);
  }
}
