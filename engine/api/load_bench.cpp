// The load generator behind `tessera bench serve` (include/tessera/load_bench.h):
// requests made up front from the seed, sent at their arrival times by one
// thread each, their outcomes reduced to vllm bench serve's figures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "core/status.h"
#include "engine/bench/stats.h"
#include "tessera/load_bench.h"

namespace tessera {

LoadTarget::~LoadTarget() = default;

Expected<LengthSpec> LengthSpec::parse(const std::string& text, const std::string& flag) {
  auto number = [&](const std::string& s, int32_t* out) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *out = std::stoi(s);
    return *out >= 1;
  };
  LengthSpec spec;
  const size_t colon = text.find(':');
  const bool ok = colon == std::string::npos
                      ? number(text, &spec.lo) && number(text, &spec.hi)
                      : number(text.substr(0, colon), &spec.lo) && number(text.substr(colon + 1), &spec.hi) && spec.lo <= spec.hi;
  if (!ok) return invalid_argument(flag + ": expected N or A:B with 1 <= A <= B, got '" + text + "'");
  return spec;
}

namespace {

using Clock = std::chrono::steady_clock;

LatencyStats stats_of(const std::vector<double>& v) {
  LatencyStats s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / (double)v.size();
  s.median = percentile(v, 50);
  s.p90 = percentile(v, 90);
  s.p99 = percentile(v, 99);
  return s;
}

Status check(const LoadOptions& o) {
  if (o.num_prompts < 1) return invalid_argument("--num-prompts: must be >= 1, got " + std::to_string(o.num_prompts));
  if (!(o.request_rate >= 0)) return invalid_argument("--request-rate: must be > 0 (or inf), got " + std::to_string(o.request_rate));
  if (!(o.burstiness > 0)) return invalid_argument("--burstiness: must be > 0, got " + std::to_string(o.burstiness));
  if (o.dataset.empty() && (o.input.lo < 1 || o.output.lo < 1))
    return invalid_argument("--input-len/--output-len: lengths must be >= 1");
  if (o.long_fraction < 0 || o.long_fraction > 1)
    return invalid_argument("--long-prompts: the fraction must be in [0, 1], got " + std::to_string(o.long_fraction));
  if (o.long_fraction > 0 && !o.dataset.empty()) return invalid_argument("--long-prompts: not with --dataset");
  if (o.long_fraction > 0 && o.long_input.lo < 1) return invalid_argument("--long-prompts: the length must be >= 1");
  for (size_t i = 0; i < o.dataset.size(); ++i) {
    const DatasetEntry& e = o.dataset[i];
    if (e.output_len < 1) return invalid_argument("dataset entry " + std::to_string(i + 1) + ": output_len must be >= 1");
    if (e.prompt_ids.empty() && e.prompt_text.empty() && e.input_len < 1)
      return invalid_argument("dataset entry " + std::to_string(i + 1) + ": needs input_len >= 1 or a prompt");
  }
  return Status::ok();
}

std::vector<LoadRequest> make_requests(const LoadOptions& o, int32_t vocab, std::mt19937_64& rng) {
  auto uniform = [&](LengthSpec s) { return std::uniform_int_distribution<int32_t>(s.lo, s.hi)(rng); };
  auto random_ids = [&](int32_t n) {
    std::vector<int32_t> ids((size_t)n);
    std::uniform_int_distribution<int32_t> pick(2, std::max(3, vocab) - 1);
    for (auto& x : ids) x = pick(rng);
    ids[0] = 1;  // BOS in llama vocabularies
    return ids;
  };
  std::vector<LoadRequest> reqs((size_t)o.num_prompts);
  for (size_t i = 0; i < reqs.size(); ++i) {
    LoadRequest& q = reqs[i];
    if (!o.dataset.empty()) {
      const DatasetEntry& e = o.dataset[i % o.dataset.size()];
      q.prompt_text = e.prompt_text;
      q.prompt_ids = !e.prompt_ids.empty() || !e.prompt_text.empty() ? e.prompt_ids : random_ids(e.input_len);
      q.max_tokens = e.output_len;
    } else {
      // The draw for long or short only when the load mixes them, so a
      // seed gives the same requests it always gave without --long-prompts.
      const bool is_long = o.long_fraction > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < o.long_fraction;
      q.prompt_ids = random_ids(uniform(is_long ? o.long_input : o.input));
      q.max_tokens = uniform(o.output);
      q.long_prompt = is_long;
    }
  }
  return reqs;
}

// Seconds from the start at which each request is sent: gaps drawn from a
// gamma distribution of mean 1 / rate and shape `burstiness` (vllm's).
std::vector<double> arrival_times(const LoadOptions& o, std::mt19937_64& rng) {
  std::vector<double> t((size_t)o.num_prompts, 0.0);
  if (o.request_rate <= 0 || std::isinf(o.request_rate)) return t;
  std::gamma_distribution<double> gap(o.burstiness, 1.0 / (o.request_rate * o.burstiness));
  double now = 0;
  for (auto& x : t) {
    x = now;
    now += gap(rng);
  }
  return t;
}

// At most `limit` holders at once (0: no limit).
class Slots {
 public:
  explicit Slots(int32_t limit) : limit_(limit), free_(limit) {}
  void acquire() {
    if (limit_off()) return;
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void release() {
    if (limit_off()) return;
    {
      std::lock_guard lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  bool limit_off() const { return limit_ <= 0; }
  const int32_t limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  int32_t free_;
};

}  // namespace

Expected<LoadReport> run_load(const LoadOptions& o, LoadTarget& target, void (*log)(const std::string&)) {
  TS_TRY(check(o));
  std::mt19937_64 rng(o.seed);
  const std::vector<LoadRequest> reqs = make_requests(o, target.vocab_size(), rng);
  const std::vector<double> arrivals = arrival_times(o, rng);
  log("bench serve: " + std::to_string(reqs.size()) + " requests to " + target.describe() + ", seed " + std::to_string(o.seed));

  std::vector<LoadOutcome> outcomes(reqs.size());
  std::vector<double> e2el(reqs.size(), 0.0);
  std::vector<std::thread> threads;
  threads.reserve(reqs.size());
  Slots slots(o.max_concurrency);
  const auto t0 = Clock::now();
  for (size_t i = 0; i < reqs.size(); ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrivals[i])));
    slots.acquire();
    threads.emplace_back([&, i] {
      const auto sent = Clock::now();
      outcomes[i] = target.run(reqs[i]);
      e2el[i] = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
      slots.release();
    });
  }
  for (auto& t : threads) t.join();

  LoadReport r;
  r.target = target.describe();
  r.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> ttft_by[2], tpot_by[2];  // short, long
  for (size_t i = 0; i < reqs.size(); ++i) {
    const LoadOutcome& out = outcomes[i];
    if (!out.ok || out.chunk_ms.empty()) {
      ++r.failed;
      if (r.first_error.empty()) r.first_error = out.ok ? "no output" : out.error;
      continue;
    }
    ++r.completed;
    r.input_tokens += out.prompt_tokens;
    r.output_tokens += out.completion_tokens;
    const double ttft = out.chunk_ms.front();
    const double tpot = out.completion_tokens > 1 ? (e2el[i] - ttft) / (double)(out.completion_tokens - 1) : 0;
    r.ttft_samples.push_back(ttft);
    if (out.completion_tokens > 1) r.tpot_samples.push_back(tpot);
    const int cls = reqs[i].long_prompt ? 1 : 0;
    r.long_completed += cls;
    ttft_by[cls].push_back(ttft);
    if (out.completion_tokens > 1) tpot_by[cls].push_back(tpot);
    r.e2el_samples.push_back(e2el[i]);
    for (size_t k = 1; k < out.chunk_ms.size(); ++k) r.itl_samples.push_back(out.chunk_ms[k] - out.chunk_ms[k - 1]);
    const bool good = (o.goodput_ttft_ms <= 0 || ttft <= o.goodput_ttft_ms) && (o.goodput_tpot_ms <= 0 || tpot <= o.goodput_tpot_ms) &&
                      (o.goodput_e2el_ms <= 0 || e2el[i] <= o.goodput_e2el_ms);
    r.good_requests += good ? 1 : 0;
  }
  const bool any_target = o.goodput_ttft_ms > 0 || o.goodput_tpot_ms > 0 || o.goodput_e2el_ms > 0;
  if (r.duration_s > 0) {
    r.request_throughput = r.completed / r.duration_s;
    r.output_throughput = (double)r.output_tokens / r.duration_s;
    r.goodput = any_target ? r.good_requests / r.duration_s : 0;
  }
  if (!any_target) r.good_requests = 0;
  r.ttft_ms = stats_of(r.ttft_samples);
  r.tpot_ms = stats_of(r.tpot_samples);
  r.itl_ms = stats_of(r.itl_samples);
  r.e2el_ms = stats_of(r.e2el_samples);
  if (o.long_fraction > 0) {
    r.ttft_short_ms = stats_of(ttft_by[0]);
    r.ttft_long_ms = stats_of(ttft_by[1]);
    r.tpot_short_ms = stats_of(tpot_by[0]);
    r.tpot_long_ms = stats_of(tpot_by[1]);
  }
  return r;
}

}  // namespace tessera
