// `tessera bench serve` against the serving engine in this process: the
// bench model (a file or the synthetic one), random-id prompts, greedy
// sampling with EOS ignored so every request decodes its output length.
#include <chrono>
#include <mutex>

#include "backends/cpu/cpu_device.h"
#include "engine/bench/bench_engine.h"
#include "engine/api/model_impl.h"
#include "engine/bench/bench_run.h"
#include "tessera/load_bench.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

class EngineLoadTarget final : public LoadTarget {
 public:
  EngineLoadTarget(std::unique_ptr<ThreadPool> pool, std::unique_ptr<ServingEngine> engine, std::string what, int32_t vocab)
      : pool_(std::move(pool)), engine_(std::move(engine)), what_(std::move(what)), vocab_(vocab) {}

  LoadOutcome run(const LoadRequest& in) override {
    LoadOutcome out;
    if (in.prompt_ids.empty()) {
      out.error = "the in-process engine takes token-id prompts only (the bench model has no tokenizer)";
      return out;
    }
    Request q;
    q.prompt = in.prompt_ids;
    q.max_tokens = in.max_tokens;
    q.sampling.temperature = 0;
    q.ignore_eos = true;
    q.detokenize = false;
    const auto sent = Clock::now();
    std::vector<double>& chunks = out.chunk_ms;
    chunks.reserve((size_t)in.max_tokens);
    auto h = engine_->submit(std::move(q), Delivery::callback, [&chunks, sent](const TokenOutput& ev) {
      if (ev.token >= 0) chunks.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
    });
    if (!h) {
      out.error = h.status().message();
      return out;
    }
    const RequestResult& r = (*h)->wait();
    const SequenceResult& s = r.sequences.at(0);
    if (s.finish == FinishReason::error) {
      out.error = s.error;
      return out;
    }
    out.ok = true;
    out.prompt_tokens = r.metrics.prompt_tokens;
    out.completion_tokens = (int64_t)s.tokens.size();
    return out;
  }
  int32_t vocab_size() const override { return vocab_; }
  std::string describe() const override { return what_; }
  bool engine_metrics(EngineMetrics* out) const override {
    *out = engine_->metrics();
    return true;
  }

 private:
  std::unique_ptr<ThreadPool> pool_;  // the weights were built on it
  std::unique_ptr<ServingEngine> engine_;
  std::string what_;
  int32_t vocab_;
};

}  // namespace

Expected<std::unique_ptr<LoadTarget>> open_engine_load_target(const ServingBenchOptions& o, void (*log)(const std::string&)) {
  TS_ASSIGN_OR_RETURN(const auto devices, bench_devices(o.model.backend));
  auto pool = std::make_unique<ThreadPool>(cpu::default_cpu_threads());
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const ModelWeights> w, load_bench_weights(o.model, *pool, log));
  const TransformerConfig& c = w->config;
  const int32_t need = o.model.prompt_tokens + o.model.gen_tokens;
  if (need > c.context_length)
    return invalid_argument("bench serve: the longest request (" + std::to_string(need) + " tokens) exceeds the model's context " +
                            std::to_string(c.context_length));
  EngineSpec spec{o.concurrency, o.max_num_batched_tokens, o.max_prefill_chunk, std::min(c.context_length, need + 16)};
  TS_ASSIGN_OR_RETURN(spec.spec, spec_config_from(o.speculative));
  TS_ASSIGN_OR_RETURN(auto e, open_bench_engine(w, o, spec));
  log("bench serve: " + e->memory_summary());
  const std::string what = "the in-process engine (" + w->source + ", " + devices.front().name + ")";
  return std::unique_ptr<LoadTarget>(std::make_unique<EngineLoadTarget>(std::move(pool), std::move(e), what, c.vocab_size));
}

}  // namespace tessera
