// `tessera bench` with --draft-model, --lookup-ngram or --jacobi: one greedy
// request decoded plainly and with each method, rounds alternating (run_spec_bench).

#include <algorithm>
#include <random>

#include "core/thread_pool.h"
#include "backends/cpu/cpu_device.h"
#include "engine/api/model_impl.h"
#include "engine/bench/bench_engine.h"
#include "engine/bench/bench_run.h"
#include "engine/bench/stats.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera {

namespace {

struct Arm {
  SpecBenchMethod result;
  std::unique_ptr<ServingEngine> engine;
  std::vector<double> tok_s;
};

}  // namespace

Expected<SpecBenchReport> run_spec_bench(const SpecBenchOptions& o, void (*log)(const std::string&)) {
  if (o.rounds < 1) return invalid_argument("bench: rounds must be >= 1");
  const BenchOptions& b = o.model;
  ThreadPool pool(cpu::default_cpu_threads());
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const ModelWeights> w, load_bench_weights(b, pool, log));
  const TransformerConfig& c = w->config;
  std::vector<int32_t> prompt = o.prompt;
  if (prompt.empty() && !o.prompt_text.empty()) {
    if (!w->tokenizer) return invalid_argument("-p: " + w->source + " carries no tokenizer; give --prompt-ids");
    TS_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_data(*w->tokenizer, w->source));
    prompt = tok.encode(o.prompt_text, tok.default_options());
  }
  if (prompt.empty()) {
    std::mt19937 rng((uint32_t)b.seed);
    for (int32_t i = 0; i < b.prompt_tokens; ++i) prompt.push_back((int32_t)(rng() % (uint32_t)c.vocab_size));
    prompt[0] = 1;
  }
  for (int32_t t : prompt)
    if (t < 0 || t >= c.vocab_size) return out_of_range("--prompt-ids: token id " + std::to_string(t) + " is outside the vocabulary");
  const int32_t ctx = std::min(c.context_length, (int32_t)prompt.size() + b.gen_tokens + 64);
  if ((int32_t)prompt.size() + b.gen_tokens > c.context_length)
    return invalid_argument("bench: the prompt's " + std::to_string(prompt.size()) + " tokens plus --gen-tokens exceed the context");

  std::vector<Arm> arms(1 + o.methods.size());
  for (size_t i = 0; i < arms.size(); ++i) {
    ServingBenchOptions so;
    so.model = b;
    so.prefix_caching = false;  // every round computes the prompt afresh
    EngineSpec es{1, 256, 0, ctx};
    TS_ASSIGN_OR_RETURN(es.spec, i == 0 ? Expected<SpecConfig>(SpecConfig{}) : spec_config_from(o.methods[i - 1]));
    TS_ASSIGN_OR_RETURN(arms[i].engine, open_bench_engine(w, so, es));
    arms[i].result.method = i == 0 ? "none" : o.methods[i - 1].method;
  }
  SpecBenchReport r;
  r.device = arms[0].engine->runner().device_info();
  r.model = w->source;
  r.prompt_tokens = (int32_t)prompt.size();
  r.gen_tokens = b.gen_tokens;
  Request q;
  q.prompt = prompt;
  q.max_tokens = b.gen_tokens;
  q.sampling.temperature = 0;
  q.ignore_eos = true;
  q.detokenize = false;
  // Warm-up, then rounds alternating among the arms.
  for (int round = -1; round < o.rounds; ++round) {
    for (Arm& a : arms) {
      const EngineMetrics before = a.engine->metrics();
      TS_ASSIGN_OR_RETURN(auto h, a.engine->submit(q));
      const RequestResult& res = h->wait();
      if (res.sequences.at(0).finish == FinishReason::error) return internal_error("bench: " + res.sequences[0].error);
      if (round < 0) continue;
      const EngineMetrics m = a.engine->metrics();
      const auto& ids = res.sequences[0].tokens;
      const double decode_ms = res.metrics.e2e_ms - res.metrics.ttft_ms;
      a.tok_s.push_back(decode_ms > 0 ? (double)(ids.size() - 1) / (decode_ms / 1e3) : 0);
      a.result.proposed += m.spec_proposed - before.spec_proposed;
      a.result.accepted += m.spec_accepted - before.spec_accepted;
      const int64_t passes = m.decode_passes - before.decode_passes;
      a.result.tokens_per_pass = passes > 0 ? (double)(m.tokens_generated - before.tokens_generated) / (double)passes : 0;
      a.result.ids = ids;
      log("bench: " + a.result.method + " round " + std::to_string(round + 1) + ": " + std::to_string(a.tok_s.back()) + " tok/s");
    }
  }
  for (Arm& a : arms) {
    a.result.decode_tok_s = median(a.tok_s);
    a.result.acceptance_rate = a.result.proposed > 0 ? (double)a.result.accepted / (double)a.result.proposed : 0;
    a.result.spec_speedup = arms[0].tok_s.empty() ? 0 : a.result.decode_tok_s / median(arms[0].tok_s);
    r.identical = r.identical && a.result.ids == arms[0].result.ids;
    r.methods.push_back(a.result);
  }
  return r;
}

}  // namespace tessera
