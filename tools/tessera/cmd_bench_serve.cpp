// tessera bench serve: a load generator in the manner of `vllm bench serve`,
// against the in-process engine or any OpenAI-compatible server (--url).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include <tessera/load_bench.h>

#include "tools/tessera/cli_common.h"
#include "tools/tessera/engine_flags.h"
#include "tools/tessera/http_load_target.h"

namespace tessera::cli {

namespace {

struct ServeBenchFlags {
  std::string url, served_model, api_key, model, backend = "cpu", type = "q8_0";
  std::string input_len = "128", output_len = "128", dataset, plot, request_rate = "inf", long_prompts;
  std::vector<std::string> goodput;
  int32_t num_prompts = 100, max_concurrency = 0, vocab_size = 256;
  double burstiness = 1;
  uint64_t seed = 0;
  EngineFlags engine;
  bool json = false;
} f;

void log_line(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

Status parse_goodput(LoadOptions& o) {
  for (const std::string& g : f.goodput) {
    const size_t colon = g.find(':');
    const std::string key = g.substr(0, colon);
    double ms = 0;
    try {
      size_t used = 0;
      ms = colon == std::string::npos ? -1 : std::stod(g.substr(colon + 1), &used);
      if (colon != std::string::npos && used != g.size() - colon - 1) ms = -1;
    } catch (const std::exception&) {
      ms = -1;
    }
    if (!(ms > 0)) return invalid_argument("--goodput: expected ttft:MS, tpot:MS or e2el:MS with MS > 0, got '" + g + "'");
    if (key == "ttft") o.goodput_ttft_ms = ms;
    else if (key == "tpot") o.goodput_tpot_ms = ms;
    else if (key == "e2el") o.goodput_e2el_ms = ms;
    else return invalid_argument("--goodput: unknown metric '" + key + "' (expected ttft, tpot or e2el)");
  }
  return Status::ok();
}

// One request a line: {"input_len": N, "output_len": M}, or {"prompt": text or
// [ids], "output_len": M}.
Expected<std::vector<DatasetEntry>> read_dataset(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error(path + ": cannot open");
  std::vector<DatasetEntry> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return invalid_argument(where + ": expected one JSON object");
    DatasetEntry e;
    auto int_field = [&](const char* k, int32_t* v) -> Status {
      if (!j.contains(k)) return Status::ok();
      if (!j[k].is_number_integer() || j[k].get<int64_t>() < 1 || j[k].get<int64_t>() > (1 << 24))
        return invalid_argument(where + ": '" + k + "' must be an integer >= 1");
      *v = j[k].get<int32_t>();
      return Status::ok();
    };
    if (Status s = int_field("input_len", &e.input_len); !s.is_ok()) return s;
    if (Status s = int_field("output_len", &e.output_len); !s.is_ok()) return s;
    if (j.contains("prompt")) {
      const auto& p = j["prompt"];
      if (p.is_string()) e.prompt_text = p.get<std::string>();
      else if (p.is_array() && !p.empty() && std::all_of(p.begin(), p.end(), [](const auto& x) { return x.is_number_integer(); }))
        e.prompt_ids = p.get<std::vector<int32_t>>();
      else return invalid_argument(where + ": 'prompt' must be a string or a non-empty array of token ids");
    }
    if (e.output_len < 1) return invalid_argument(where + ": 'output_len' (an integer >= 1) is required");
    if (e.prompt_text.empty() && e.prompt_ids.empty() && e.input_len < 1)
      return invalid_argument(where + ": needs 'input_len' or 'prompt'");
    out.push_back(std::move(e));
  }
  if (out.empty()) return invalid_argument(path + ": no requests");
  return out;
}

nlohmann::json stats_json(const LatencyStats& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"p90", s.p90}, {"p99", s.p99}};
}

int serve_bench_main() {
  LoadOptions o;
  o.num_prompts = f.num_prompts;
  o.burstiness = f.burstiness;
  o.seed = f.seed;
  o.max_concurrency = f.max_concurrency;
  if (f.request_rate == "inf") o.request_rate = 0;
  else {
    try {
      size_t used = 0;
      o.request_rate = std::stod(f.request_rate, &used);
      if (used != f.request_rate.size() || !(o.request_rate > 0)) throw std::invalid_argument("rate");
    } catch (const std::exception&) {
      return fail(invalid_argument("--request-rate: expected requests per second > 0 or inf, got '" + f.request_rate + "'"));
    }
  }
  auto in = LengthSpec::parse(f.input_len, "--input-len");
  if (!in) return fail(in.status());
  auto outl = LengthSpec::parse(f.output_len, "--output-len");
  if (!outl) return fail(outl.status());
  o.input = *in;
  o.output = *outl;
  if (Status s = parse_goodput(o); !s.is_ok()) return fail(s);
  if (!f.long_prompts.empty()) {
    // F:LEN or F:A:B, the share of long prompts and their length.
    const size_t colon = f.long_prompts.find(':');
    double frac = -1;
    try {
      size_t used = 0;
      frac = colon == std::string::npos ? -1 : std::stod(f.long_prompts.substr(0, colon), &used);
      if (used != colon) frac = -1;
    } catch (const std::exception&) {
      frac = -1;
    }
    if (!(frac > 0 && frac <= 1))
      return fail(invalid_argument("--long-prompts: expected F:LEN or F:A:B with F in (0, 1], got '" + f.long_prompts + "'"));
    auto len = LengthSpec::parse(f.long_prompts.substr(colon + 1), "--long-prompts");
    if (!len) return fail(len.status());
    o.long_fraction = frac;
    o.long_input = *len;
  }
  int32_t longest_in = std::max(o.input.hi, o.long_input.hi), longest_out = o.output.hi;
  if (!f.dataset.empty()) {
    auto d = read_dataset(f.dataset);
    if (!d) return fail(d.status());
    o.dataset = std::move(*d);
    longest_in = longest_out = 1;
    for (const DatasetEntry& e : o.dataset) {
      longest_in = std::max(longest_in, e.prompt_ids.empty() ? e.input_len : (int32_t)e.prompt_ids.size());
      longest_out = std::max(longest_out, e.output_len);
    }
  }

  // Plain decoding; with --draft-model, --lookup-ngram or --jacobi the
  // same workload (same seed) with each method, then plainly again: the
  // speed-ups are over the faster of the two plain runs.
  std::vector<EngineOptions::Speculative> arms = {EngineOptions::Speculative{}};
  for (const auto& m : f.engine.spec.methods()) arms.push_back(m);
  if (arms.size() > 1) arms.push_back(EngineOptions::Speculative{});
  if (arms.size() > 1 && !f.url.empty())
    return fail(invalid_argument("--draft-model, --lookup-ngram, --jacobi: speculation is measured on the in-process engine, not with --url"));
  struct ArmResult {
    std::string method;
    LoadReport report;
    EngineMetrics metrics;
  };
  std::vector<ArmResult> results;
  for (const auto& arm : arms) {
    std::unique_ptr<LoadTarget> target;
    if (!f.url.empty()) {
      HttpTargetOptions h;
      h.url = f.url;
      h.model = f.served_model;
      h.api_key = f.api_key;
      h.vocab_size = f.vocab_size;
      auto t = open_http_load_target(h);
      if (!t) return fail(t.status());
      target = std::move(*t);
    } else {
      ServingBenchOptions so;
      so.model.model_path = f.model;
      so.model.backend = f.backend;
      so.model.synthetic_type = f.type;
      so.model.prompt_tokens = longest_in;
      so.model.gen_tokens = longest_out;
      so.concurrency = f.engine.max_num_seqs;
      f.engine.apply(so);
      so.speculative = arm;
      auto t = open_engine_load_target(so, log_line);
      if (!t) return fail(t.status());
      target = std::move(*t);
    }
    if (arms.size() > 1) log_line("bench serve: speculative method " + arm.method);
    auto rep = run_load(o, *target, log_line);
    if (!rep) return fail(rep.status());
    ArmResult a{arm.method, std::move(*rep), {}};
    target->engine_metrics(&a.metrics);
    results.push_back(std::move(a));
  }
  const LoadReport* report = &results[0].report;
  if (results.size() > 1 && results.back().report.output_throughput > report->output_throughput) report = &results.back().report;
  const LoadReport& r = *report;
  if (!f.plot.empty()) {
    std::ofstream svg(f.plot);
    svg << load_report_svg(r);
    if (!svg) return fail(io_error(f.plot + ": cannot write the plot"));
  }
  if (f.json) {
    nlohmann::json j = {{"target", r.target},
                        {"num_prompts", o.num_prompts},
                        {"request_rate", o.request_rate > 0 ? nlohmann::json(o.request_rate) : nlohmann::json("inf")},
                        {"burstiness", o.burstiness},
                        {"seed", o.seed},
                        {"completed", r.completed},
                        {"failed", r.failed},
                        {"duration_s", r.duration_s},
                        {"input_tokens", r.input_tokens},
                        {"output_tokens", r.output_tokens},
                        {"request_throughput", r.request_throughput},
                        {"output_throughput", r.output_throughput},
                        {"goodput", r.goodput},
                        {"good_requests", r.good_requests},
                        {"ttft_ms", stats_json(r.ttft_ms)},
                        {"tpot_ms", stats_json(r.tpot_ms)},
                        {"itl_ms", stats_json(r.itl_ms)},
                        {"e2el_ms", stats_json(r.e2el_ms)}};
    if (!r.first_error.empty()) j["first_error"] = r.first_error;
    if (o.long_fraction > 0) {
      j["long_fraction"] = o.long_fraction;
      j["long_completed"] = r.long_completed;
      j["ttft_short_ms"] = stats_json(r.ttft_short_ms);
      j["ttft_long_ms"] = stats_json(r.ttft_long_ms);
      j["tpot_short_ms"] = stats_json(r.tpot_short_ms);
      j["tpot_long_ms"] = stats_json(r.tpot_long_ms);
    }
    if (results.size() > 1) {
      nlohmann::json spec = nlohmann::json::array();
      for (const ArmResult& a : results)
        spec.push_back({{"method", a.method},
                        {"output_throughput", a.report.output_throughput},
                        {"tpot_ms", stats_json(a.report.tpot_ms)},
                        {"tokens_per_pass", a.metrics.tokens_per_pass()},
                        {"acceptance_rate", a.metrics.acceptance_rate()},
                        {"spec_speedup", r.output_throughput > 0 ? a.report.output_throughput / r.output_throughput : 0.0}});
      j["speculative"] = spec;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("target              %s\n", r.target.c_str());
    std::printf("requests            %d completed, %d failed in %.2f s (seed %llu)\n", r.completed, r.failed, r.duration_s,
                (unsigned long long)o.seed);
    if (!r.first_error.empty()) std::printf("first error         %s\n", r.first_error.c_str());
    std::printf("tokens              %lld in, %lld out\n", (long long)r.input_tokens, (long long)r.output_tokens);
    std::printf("request throughput  %10.3f req/s\n", r.request_throughput);
    std::printf("output throughput   %10.2f tok/s\n", r.output_throughput);
    if (o.goodput_ttft_ms > 0 || o.goodput_tpot_ms > 0 || o.goodput_e2el_ms > 0)
      std::printf("goodput             %10.3f req/s (%d of %d requests met every target)\n", r.goodput, r.good_requests,
                  o.num_prompts);
    std::printf("%-8s %10s %10s %10s %10s  (ms)\n", "", "mean", "median", "p90", "p99");
    auto row = [](const char* name, const LatencyStats& s) {
      std::printf("%-8s %10.2f %10.2f %10.2f %10.2f\n", name, s.mean, s.median, s.p90, s.p99);
    };
    row("TTFT", r.ttft_ms);
    row("TPOT", r.tpot_ms);
    row("ITL", r.itl_ms);
    row("E2EL", r.e2el_ms);
    if (o.long_fraction > 0) {
      std::printf("short and long prompts apart (%d long of %d completed):\n", r.long_completed, r.completed);
      row("TTFT s", r.ttft_short_ms);
      row("TTFT l", r.ttft_long_ms);
      row("TPOT s", r.tpot_short_ms);
      row("TPOT l", r.tpot_long_ms);
    }
    if (results.size() > 1) {
      std::printf("speculative (same workload and seed, this run):\n");
      for (const ArmResult& a : results)
        std::printf("  %-8s %10.2f tok/s  %.2fx  TPOT median %.2f ms  %.2f tokens/pass  acceptance %.1f %%\n", a.method.c_str(),
                    a.report.output_throughput, r.output_throughput > 0 ? a.report.output_throughput / r.output_throughput : 0.0,
                    a.report.tpot_ms.median, a.metrics.tokens_per_pass(), 100 * a.metrics.acceptance_rate());
    }
  }
  return r.completed > 0 ? 0 : 1;
}

}  // namespace

CLI::App* add_bench_serve(CLI::App& bench) {
  CLI::App* s = bench.add_subcommand("serve", "load generator: Poisson arrivals against the engine or an OpenAI-compatible --url; "
                                              "throughput, goodput, TTFT/TPOT/ITL/E2EL (docs/performance.md)");
  s->add_option("--url", f.url, "an OpenAI-compatible server, http://HOST:PORT (default: the engine in this process)");
  s->add_option("--served-model", f.served_model, "with --url: the request's model field (default: the first of /v1/models)");
  s->add_option("--api-key", f.api_key, "with --url: sent as Authorization: Bearer KEY");
  s->add_option("--vocab-size", f.vocab_size, "with --url: random prompt ids are drawn below this (default 256)")->check(CLI::Range(3, 1 << 24));
  s->add_option("-m,--model", f.model, "in-process: model file (default: the synthetic bench model)");
  s->add_option("--backend", f.backend, "in-process: backend");
  s->add_option("--type", f.type, "in-process synthetic model weight type: q8_0 (default), q4_0, f16, f32");
  s->add_option("--num-prompts", f.num_prompts, "requests to send (default 100)")->check(CLI::Range(1, 1 << 20));
  s->add_option("--request-rate", f.request_rate, "requests per second, or inf: all at once (default)");
  s->add_option("--burstiness", f.burstiness, "gamma shape of the arrival gaps: 1 Poisson (default), < 1 burstier, > 1 steadier");
  s->add_option("--input-len", f.input_len, "prompt tokens: N or A:B uniform (default 128)");
  s->add_option("--output-len", f.output_len, "tokens to generate: N or A:B uniform (default 128)");
  s->add_option("--long-prompts", f.long_prompts,
                "a mixed load: F:LEN (or F:A:B), this share of requests has prompts of that length instead of --input-len; "
                "TTFT and TPOT are also reported for the short and the long apart");
  s->add_option("--dataset", f.dataset, "JSONL of {\"input_len\", \"output_len\"} or {\"prompt\": text|[ids], \"output_len\"}, taken in turn");
  s->add_option("--goodput", f.goodput, "latency targets a good request meets: ttft:MS tpot:MS e2el:MS");
  s->add_option("--max-concurrency", f.max_concurrency, "requests in flight at most (default: no limit)")->check(CLI::Range(0, 1 << 20));
  s->add_option("--seed", f.seed, "seed of the lengths, prompts and arrivals (printed)");
  s->add_option("--plot", f.plot, "write the distributions (CDFs) as an SVG file");
  s->add_flag("--json", f.json, "print one JSON object");
  f.engine.add(*s, true, true);
  return s;
}

int bench_serve_main() { return serve_bench_main(); }

}  // namespace tessera::cli
