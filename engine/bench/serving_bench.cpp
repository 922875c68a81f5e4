#include "engine/bench/serving_bench.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "engine/bench/bench_engine.h"
#include "engine/bench/bench_run.h"
#include "engine/bench/stats.h"
#include "engine/serving/serving_engine.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// When each request was submitted and when each of its tokens arrived (on
// the engine thread, in the request's callback).
struct Timeline {
  std::vector<Clock::time_point> submitted;
  std::vector<std::vector<Clock::time_point>> tokens;
  double ttft_ms(size_t i) const { return tokens[i].empty() ? 0 : ms_between(submitted[i], tokens[i].front()); }
  double tpot_ms(size_t i) const {
    const auto& t = tokens[i];
    return t.size() < 2 ? 0 : ms_between(t.front(), t.back()) / (double)(t.size() - 1);
  }
};

Request greedy_request(std::vector<int32_t> prompt, int32_t gen) {
  Request q;
  q.prompt = std::move(prompt);
  q.max_tokens = gen;
  q.sampling.temperature = 0;
  q.ignore_eos = true;
  q.detokenize = false;
  return q;
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int32_t n, int32_t vocab) {
  std::vector<int32_t> t((size_t)n);
  for (auto& x : t) x = 2 + (int32_t)(rng() % (uint32_t)(vocab - 2));
  return t;
}

// Submits `reqs` (all at once) and waits for all.
Expected<Timeline> run_requests(ServingEngine& e, const std::vector<Request>& reqs) {
  Timeline tl;
  tl.submitted.resize(reqs.size());
  tl.tokens.resize(reqs.size());
  std::vector<std::shared_ptr<RequestState>> handles;
  for (size_t i = 0; i < reqs.size(); ++i) {
    tl.tokens[i].reserve((size_t)reqs[i].max_tokens);
    tl.submitted[i] = Clock::now();
    auto h = e.submit(reqs[i], Delivery::callback, [&tl, i](const TokenOutput& ev) {
      if (ev.token >= 0) tl.tokens[i].push_back(Clock::now());
    });
    if (!h) return h.status();
    handles.push_back(*h);
  }
  for (auto& h : handles) {
    const RequestResult& r = h->wait();
    if (r.sequences[0].finish == FinishReason::error) return internal_error("bench request: " + r.sequences[0].error);
  }
  return tl;
}

// Tokens per second while every request was decoding: from the last first
// token to the first last token, the tokens that arrived in between.
double concurrent_decode_rate(const Timeline& tl) {
  Clock::time_point start = tl.tokens[0].front(), end = tl.tokens[0].back();
  for (const auto& t : tl.tokens) {
    start = std::max(start, t.front());
    end = std::min(end, t.back());
  }
  int64_t n = 0;
  for (const auto& t : tl.tokens)
    for (const auto& x : t) n += (x > start && x <= end) ? 1 : 0;
  const double ms = ms_between(start, end);
  if (ms <= 0 || n < (int64_t)tl.tokens.size()) return 0;
  return (double)n * 1e3 / ms;
}

// The gaps between consecutive tokens of the first `streams` requests that
// overlap [from, to] (the later token after `from`, the earlier before `to`).
std::vector<double> gaps_within(const Timeline& tl, size_t streams, Clock::time_point from, Clock::time_point to) {
  std::vector<double> g;
  for (size_t i = 0; i < streams; ++i)
    for (size_t k = 1; k < tl.tokens[i].size(); ++k)
      if (tl.tokens[i][k] > from && tl.tokens[i][k - 1] < to) g.push_back(ms_between(tl.tokens[i][k - 1], tl.tokens[i][k]));
  return g;
}

// Four streams decode; a long prompt arrives; the streams' inter-token gaps
// from its submission to its first token.
Expected<std::vector<double>> long_prompt_gaps(ServingEngine& e, std::mt19937& rng, int32_t vocab, int32_t long_tokens) {
  constexpr size_t kStreams = 4;
  Timeline tl;
  tl.submitted.resize(kStreams + 1);
  tl.tokens.resize(kStreams + 1);
  std::vector<std::shared_ptr<RequestState>> handles;
  const int32_t stream_gen = std::min(1024, e.max_context() - 64);
  for (size_t i = 0; i <= kStreams; ++i) {
    tl.tokens[i].reserve((size_t)stream_gen + 1);
    if (i == kStreams) {
      // Wait until every stream is decoding.
      for (size_t k = 0; k < kStreams; ++k)
        while (handles[k]->generated() < 3 && !handles[k]->done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::vector<int32_t> prompt = random_tokens(rng, i == kStreams ? long_tokens : 16, vocab);
    prompt[0] = 1;
    tl.submitted[i] = Clock::now();
    auto h = e.submit(greedy_request(std::move(prompt), i == kStreams ? 1 : stream_gen), Delivery::callback,
                      [&tl, i](const TokenOutput& ev) {
                        if (ev.token >= 0) tl.tokens[i].push_back(Clock::now());
                      });
    if (!h) return h.status();
    handles.push_back(*h);
  }
  handles[kStreams]->wait();
  const Clock::time_point arrived = tl.submitted[kStreams];
  const Clock::time_point done = tl.tokens[kStreams].empty() ? Clock::now() : tl.tokens[kStreams].front();
  for (size_t k = 0; k < kStreams; ++k) e.cancel(*handles[k]);
  for (auto& h : handles) h->wait();
  // The streams' gaps while the long prompt was computed.
  return gaps_within(tl, kStreams, arrived, done);
}

}  // namespace

Expected<ServingBenchReport> serving_bench(const ServingBenchOptions& o, void (*log)(const std::string&)) {
  const BenchOptions& b = o.model;
  if (o.concurrency < 1) return invalid_argument("--concurrency: must be >= 1, got " + std::to_string(o.concurrency));
  if (b.prompt_tokens < 1 || b.gen_tokens < 2) return invalid_argument("bench: --prompt-tokens >= 1 and --gen-tokens >= 2 required");
  TS_ASSIGN_OR_RETURN(const auto devices, bench_devices(b.backend));
  ThreadPool pool(cpu::default_cpu_threads());
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const ModelWeights> w, load_bench_weights(b, pool, log));
  const TransformerConfig& c = w->config;
  const int32_t need = std::max({b.prompt_tokens + b.gen_tokens, o.prefix_tokens + 64, o.long_prompt_tokens + 1});
  if (need > c.context_length)
    return invalid_argument("bench: the longest request (" + std::to_string(need) + " tokens) exceeds the model's context " +
                            std::to_string(c.context_length));
  const int32_t ctx = std::min(c.context_length, std::max(need, b.prompt_tokens + b.gen_tokens + 16));

  ServingBenchReport r;
  r.concurrency = o.concurrency;
  r.prompt_tokens = b.prompt_tokens;
  r.gen_tokens = b.gen_tokens;
  r.model = w->source;
  r.weight_type = matmul_weight_type(*w);
  std::mt19937 rng((uint32_t)b.seed);
  auto prompt = [&](int32_t n) {
    std::vector<int32_t> p = random_tokens(rng, n, c.vocab_size);
    p[0] = 1;
    return p;
  };
  {
    EngineSpec spec{o.concurrency, o.max_num_batched_tokens, o.max_prefill_chunk, ctx};
    TS_ASSIGN_OR_RETURN(auto e, open_bench_engine(w, o, spec));
    r.device = e->runner().device_info();
    r.kv_summary = e->memory_summary();
    log("bench: " + r.kv_summary);
    for (const auto& note : e->runner().placement_notes()) log("bench: " + note);
    TS_TRY(run_requests(*e, {greedy_request(prompt(8), 4)}).status());  // warm-up: every weight page touched

    std::vector<double> single;
    auto run_single = [&]() -> Status {
      log("bench: one request alone (" + std::to_string(b.prompt_tokens) + " prompt tokens, " + std::to_string(b.gen_tokens) + " generated)");
      TS_ASSIGN_OR_RETURN(Timeline tl, run_requests(*e, {greedy_request(prompt(b.prompt_tokens), b.gen_tokens)}));
      single.push_back(tl.tpot_ms(0));
      return Status::ok();
    };
    TS_TRY(run_single());
    log("bench: " + std::to_string(o.concurrency) + " requests at once");
    std::vector<Request> reqs;
    for (int32_t i = 0; i < o.concurrency; ++i) reqs.push_back(greedy_request(prompt(b.prompt_tokens), b.gen_tokens));
    const EngineMetrics before = e->metrics();
    const auto t0 = Clock::now();
    TS_ASSIGN_OR_RETURN(Timeline tl, run_requests(*e, reqs));
    const double wall_ms = ms_between(t0, Clock::now());
    const EngineMetrics after = e->metrics();
    TS_TRY(run_single());

    r.single_decode_tok_s = 1e3 / median(single);
    std::vector<double> ttft, tpot;
    for (size_t i = 0; i < reqs.size(); ++i) {
      ttft.push_back(tl.ttft_ms(i));
      tpot.push_back(tl.tpot_ms(i));
    }
    r.aggregate_decode_tok_s = concurrent_decode_rate(tl);
    if (r.aggregate_decode_tok_s == 0) r.aggregate_decode_tok_s = (double)o.concurrency * 1e3 / median(tpot);
    r.requests_per_s = (double)o.concurrency * 1e3 / wall_ms;
    r.ttft_p50_ms = percentile(ttft, 50);
    r.ttft_p99_ms = percentile(ttft, 99);
    r.tpot_p50_ms = percentile(tpot, 50);
    r.tpot_p99_ms = percentile(tpot, 99);
    r.kv_peak_blocks = after.kv_blocks_peak;
    const int64_t steps = after.steps - before.steps;
    const double step_ms = after.step_ms - before.step_ms;
    r.mean_tokens_per_step = steps ? (double)(after.step_tokens - before.step_tokens) / (double)steps : 0;
    r.step_ms = steps ? step_ms / (double)steps : 0;
    r.host_fraction = step_ms > 0 ? (after.host_ms - before.host_ms) / step_ms : 0;

    if (o.prefix_tokens > 0) {
      // Cold: a prefix never seen; cached: the same shape after one request
      // with the shared prefix went first. Alternated, three of each.
      r.prefix_tokens = o.prefix_tokens;
      log("bench: TTFT with " + std::to_string(o.prefix_tokens) + " prompt tokens cached, and cold");
      const std::vector<int32_t> shared = prompt(o.prefix_tokens);
      auto with_suffix = [&](std::vector<int32_t> head) {
        const auto tail = random_tokens(rng, 16, c.vocab_size);
        head.insert(head.end(), tail.begin(), tail.end());
        return greedy_request(std::move(head), 2);
      };
      TS_TRY(run_requests(*e, {with_suffix(shared)}).status());
      std::vector<double> cold, cached;
      for (int rep = 0; rep < 3; ++rep) {
        TS_ASSIGN_OR_RETURN(Timeline a, run_requests(*e, {with_suffix(prompt(o.prefix_tokens))}));
        cold.push_back(a.ttft_ms(0));
        TS_ASSIGN_OR_RETURN(Timeline h, run_requests(*e, {with_suffix(shared)}));
        cached.push_back(h.ttft_ms(0));
      }
      r.ttft_cold_ms = median(cold);
      r.ttft_cached_ms = median(cached);
    }
  }
  if (o.long_prompt_tokens > 0) {
    // The same arrival twice: its prefill in chunks mixed with the streams'
    // decodes, then in one step (a step large enough for the whole prompt).
    r.long_prompt_tokens = o.long_prompt_tokens;
    r.long_prompt_chunk = o.max_prefill_chunk > 0 ? o.max_prefill_chunk : std::min(o.max_num_batched_tokens, 256);
    for (int chunked = 1; chunked >= 0; --chunked) {
      log(std::string("bench: a ") + std::to_string(o.long_prompt_tokens) + "-token prompt arrives while 4 streams decode, prefill " +
          (chunked ? "chunked" : "in one step"));
      EngineSpec spec{5, chunked ? r.long_prompt_chunk + 4 : o.long_prompt_tokens + 4, chunked ? r.long_prompt_chunk : 0, ctx};
      TS_ASSIGN_OR_RETURN(auto e, open_bench_engine(w, o, spec));
      TS_TRY(run_requests(*e, {greedy_request(prompt(8), 4)}).status());
      TS_ASSIGN_OR_RETURN(std::vector<double> gaps, long_prompt_gaps(*e, rng, c.vocab_size, o.long_prompt_tokens));
      (chunked ? r.itl_p99_chunked_ms : r.itl_p99_unchunked_ms) = percentile(gaps, 99);
      (chunked ? r.itl_max_chunked_ms : r.itl_max_unchunked_ms) = percentile(gaps, 100);
    }
  }
  return r;
}

}  // namespace tessera
