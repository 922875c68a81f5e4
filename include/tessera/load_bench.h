#pragma once
// `tessera bench serve`: a load generator in the manner of `vllm bench
// serve`. Requests arrive as a Poisson process (or a gamma process of any
// burstiness, or all at once) with input and output lengths drawn from a
// distribution or read from a file; each runs against a LoadTarget (the
// in-process engine, or any OpenAI-compatible server through the CLI's HTTP
// target), and the report gives throughput, goodput (requests per second
// that met every latency target) and the distributions of TTFT, TPOT, ITL
// and end-to-end latency.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/bench.h"
#include "tessera/serving.h"
#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

// One request as the generator makes it: token ids (random, or a file's), or
// text when the file gives text.
struct LoadRequest {
  std::vector<int32_t> prompt_ids;
  std::string prompt_text;  // used when prompt_ids is empty
  int32_t max_tokens = 16;
  bool long_prompt = false;  // drawn from LoadOptions::long_input (a mixed load)
};

// What one request saw: when each output chunk arrived, in ms from the
// moment it was sent. A target that streams text counts each chunk as one
// token, as vllm bench serve does; completion_tokens is the server's count.
struct LoadOutcome {
  bool ok = false;
  std::string error;
  std::vector<double> chunk_ms;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// Where requests go. run() is called from many threads at once, one per
// request in flight, and returns when the request has finished.
class TESSERA_API LoadTarget {
 public:
  virtual ~LoadTarget();
  virtual LoadOutcome run(const LoadRequest& request) = 0;
  // Random prompt ids are drawn below this.
  virtual int32_t vocab_size() const = 0;
  virtual std::string describe() const = 0;
  // The in-process engine's counters (speculative decoding's among them);
  // false for a target that has none (a server over HTTP).
  virtual bool engine_metrics(EngineMetrics* /*out*/) const { return false; }
};

// The serving engine in this process, on a model file or the synthetic bench
// model (o.model), with o's limits; random prompts, greedy, EOS ignored.
TESSERA_API Expected<std::unique_ptr<LoadTarget>> open_engine_load_target(const ServingBenchOptions& o,
                                                                          void (*log)(const std::string&));

// A length: "N", or "A:B" for uniform in [A, B].
struct TESSERA_API LengthSpec {
  int32_t lo = 0, hi = 0;
  static Expected<LengthSpec> parse(const std::string& text, const std::string& flag);
};

// A line of a dataset file: lengths (random ids drawn), or a prompt of its own.
struct DatasetEntry {
  int32_t input_len = 0;  // with prompt_ids and prompt_text empty: random ids of this length
  std::vector<int32_t> prompt_ids;
  std::string prompt_text;
  int32_t output_len = 0;
};

struct LoadOptions {
  int32_t num_prompts = 100;
  double request_rate = 0;  // requests per second; 0: all at once
  double burstiness = 1;    // gamma shape of the gaps: 1 Poisson, < 1 burstier, > 1 steadier
  LengthSpec input{128, 128}, output{128, 128};
  // A mixed load: each request is a long one with this probability, its
  // prompt length drawn from long_input instead of input (--long-prompts
  // F:LEN); the report then gives TTFT and TPOT of the short and the long
  // apart. Not with a dataset.
  double long_fraction = 0;
  LengthSpec long_input{0, 0};
  // Instead of input/output: requests taken in turn from these (the CLI
  // reads them from a JSONL file, docs/performance.md).
  std::vector<DatasetEntry> dataset;
  uint64_t seed = 0;
  // Goodput targets in ms; 0: not a target.
  double goodput_ttft_ms = 0, goodput_tpot_ms = 0, goodput_e2el_ms = 0;
  int32_t max_concurrency = 0;  // 0: no limit on requests in flight
};

struct LatencyStats {
  double mean = 0, median = 0, p90 = 0, p99 = 0;
};

struct LoadReport {
  std::string target;
  int32_t completed = 0, failed = 0;
  std::string first_error;
  double duration_s = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  double request_throughput = 0;  // completed requests per second
  double output_throughput = 0;   // output tokens per second
  double goodput = 0;             // requests per second that met every target (0 without targets)
  int32_t good_requests = 0;
  LatencyStats ttft_ms, tpot_ms, itl_ms, e2el_ms;
  // With long_fraction > 0: the same figures of the short and the long requests apart.
  int32_t long_completed = 0;
  LatencyStats ttft_short_ms, ttft_long_ms, tpot_short_ms, tpot_long_ms;
  // Every completed request's figures, for plots.
  std::vector<double> ttft_samples, tpot_samples, itl_samples, e2el_samples;
};

TESSERA_API Expected<LoadReport> run_load(const LoadOptions& o, LoadTarget& target, void (*log)(const std::string&));

// The four distributions as cumulative distribution functions, one panel
// each, as an SVG document.
TESSERA_API std::string load_report_svg(const LoadReport& r);

}  // namespace tessera
