#include "engine/bench/bench_run.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "backends/builtin.h"
#include "backends/cpu/cpu_device.h"
#include "core/hal/registry.h"
#include "core/compute_roofs.h"
#include "core/read_bandwidth.h"
#include "core/thread_pool.h"
#include "engine/bench/stats.h"
#include "engine/bench/competing_load.h"
#include "engine/bench/decode_loop.h"
#include "engine/bench/device_ops.h"
#include "engine/bench/roofline.h"
#include "kernels/cpu/cpu_kernels.h"
#include "engine/bench/synthetic_model.h"
#include "engine/models/load_model.h"
#include "engine/runtime/model_runner.h"
#include "engine/runtime/session.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }


int32_t argmax(std::span<const float> x) {
  return (int32_t)(std::max_element(x.begin(), x.end()) - x.begin());
}

// The KV types' bytes per token and full-context sequences in `budget` bytes.
std::vector<KvTypeFigure> kv_type_figures(const TransformerConfig& c, uint64_t budget) {
  std::vector<KvTypeFigure> out;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::fp8_e4m3}) {
    if (!is_whole_blocks(t, c.head_dim())) continue;  // the 8-bit types quantize whole 32-element blocks of a head
    const uint64_t per_token = 2ull * (uint64_t)c.n_layers * bytes_for(t, c.kv_dim());
    const uint64_t per_seq = per_token * (uint64_t)std::max(c.context_length, 1);
    out.push_back({std::string(name(t)), per_token, per_seq > 0 ? budget / per_seq : 0});
  }
  return out;
}

Expected<BenchReport> bench_device(std::shared_ptr<const ModelWeights> w, const BenchOptions& o, int device_index,
                                   ThreadPool& pool, void (*log)(const std::string&)) {
  const TransformerConfig& c = w->config;
  const int32_t ctx = std::min(c.context_length, o.prompt_tokens + o.gen_tokens + 16);
  if (o.prompt_tokens < 1 || o.gen_tokens < 2) return invalid_argument("bench: --prompt-tokens >= 1 and --gen-tokens >= 2 required");
  if (o.prompt_tokens + o.gen_tokens > c.context_length)
    return invalid_argument("bench: prompt plus generated tokens exceed the model's context " + std::to_string(c.context_length));
  RunnerOptions ro;
  ro.backend = o.backend;
  ro.device = device_index;
  ro.max_context = ctx;
  ro.max_prefill_tokens = o.prompt_tokens;
  ro.passes = o.passes;
  ro.tile = o.tile;
  ro.place = o.place;
  ro.weight_layout = o.weight_layout;
  ro.kv_type = o.kv_type;
  ro.batch_invariant = o.batch_invariant;
  ro.sample_on_device = true;
  TS_ASSIGN_OR_RETURN(RunnerWithCache rc, open_runner(w, ro));
  ModelRunner* runner = rc.runner.get();
  KvCache& kv = *rc.kv;
  for (const auto& note : runner->placement_notes()) log("bench: " + note);

  BenchReport r;
  r.device = runner->device_info();
  r.model = w->source;
  r.prompt_tokens = o.prompt_tokens;
  r.gen_tokens = o.gen_tokens;
  r.nodes_per_decode_step = runner->nodes_per_step();
  r.weight_type = matmul_weight_type(*w);
  r.weight_bytes = w->total_bytes();

  std::mt19937 rng((uint32_t)o.seed);
  std::vector<int32_t> prompt((size_t)o.prompt_tokens);
  prompt[0] = 1;
  for (size_t i = 1; i < prompt.size(); ++i) prompt[i] = (int32_t)(rng() % (uint32_t)c.vocab_size);

  // Warm-up: compile the decode and prefill plans, touch every weight page.
  {
    TS_ASSIGN_OR_RETURN(auto warm, Session::create(*runner, kv));
    TS_TRY(warm->feed(std::span<const int32_t>(prompt).first(std::min<size_t>(prompt.size(), 4))));
    const int32_t t = argmax(warm->logits());
    TS_TRY(warm->feed(std::span<const int32_t>(&t, 1)));
  }
  TS_ASSIGN_OR_RETURN(const Plan* decode_plan, runner->plan_for(1));
  r.peak_activation_bytes = decode_plan->arena_peak_bytes;
  r.activation_lower_bound_bytes = decode_plan->arena_lower_bound_bytes;

  // The CPU's roof is the host's streaming read; any other device's, its own
  // memory's (a device-to-device copy): a GPU decodes from device memory.
  const bool on_host = r.device.backend == "cpu";
  r.bandwidth_bytes = std::max<uint64_t>(4 * last_level_cache_bytes(), 1ull << 30);
  if (!on_host && r.device.memory_bytes > 0) r.bandwidth_bytes = std::min<uint64_t>(r.bandwidth_bytes, r.device.memory_bytes / 8);
  if (!on_host) r.roof = "device-to-device copy (read + write)";
  const auto measure_roof = [&]() -> Expected<double> {
    if (on_host) return measure_read_bandwidth(pool, r.bandwidth_bytes).read_GBps;
    return measure_copy_GBps(runner->device(), r.bandwidth_bytes, 5);
  };
  log("bench: measuring " + r.roof + " bandwidth over " + std::to_string(r.bandwidth_bytes >> 20) + " MiB");
  TS_ASSIGN_OR_RETURN(r.read_GBps_before, measure_roof());

  log("bench: prefill " + std::to_string(o.prompt_tokens) + " tokens, decode " + std::to_string(o.gen_tokens));
  TS_ASSIGN_OR_RETURN(auto s, Session::create(*runner, kv));
  const auto t0 = Clock::now();
  TS_TRY(s->feed(prompt));
  const auto t1 = Clock::now();
  const int32_t first = argmax(s->logits());
  const auto t2 = Clock::now();
  r.ttft_ms = ms_between(t0, t2);
  r.prefill_tok_s = o.prompt_tokens * 1e3 / ms_between(t0, t1);

  // A B A B: the serial loop and the overlapped one, each from the prompt's
  // cached context (a fork of it: copy-on-write on the device).
  std::vector<double> step_ms[2], gap_us[2];
  std::vector<int32_t> ids[2];
  for (int run = 0; run < 4; ++run) {
    const int mode = run % 2;
    TS_ASSIGN_OR_RETURN(DecodeTimes dt, run_decode_loop(*runner, kv, {s->id(), s->position(), first, o.gen_tokens - 1, mode == 1}));
    step_ms[mode].insert(step_ms[mode].end(), dt.step_ms.begin(), dt.step_ms.end());
    gap_us[mode].insert(gap_us[mode].end(), dt.gap_us.begin(), dt.gap_us.end());
    ids[mode] = dt.ids;
  }
  if (ids[0] != ids[1]) log("bench: note: the serial and overlapped loops chose different greedy tokens (an exact tie?)");
  uint64_t kv_bytes = 0;
  const DType kv_dtype = runner->kv_spec().dtype;
  r.kv_type = std::string(name(kv_dtype));
  const uint64_t kv_per_position = 2ull * (uint64_t)c.n_layers * bytes_for(kv_dtype, c.kv_dim());
  // The engine's default KV budget on this device (RunnerOptions::kv_memory_fraction -1), uncapped.
  TS_ASSIGN_OR_RETURN(const KvBudget budget, kv_budget_for(runner->device(), w->total_bytes(), -1, UINT64_MAX));
  r.kv_budget_bytes = budget.bytes;
  r.context_length = c.context_length;
  r.kv_types = kv_type_figures(c, budget.bytes);
  for (int32_t i = 0; i < o.gen_tokens - 1; ++i) kv_bytes += kv_per_position * (uint64_t)(s->position() + i + 1);
  const std::vector<double>& step_new = step_ms[1];
  TS_ASSIGN_OR_RETURN(r.read_GBps_after, measure_roof());

  r.tpot_ms = median(step_new);
  r.decode_tok_s = r.tpot_ms > 0 ? 1e3 / r.tpot_ms : 0;
  const double tpot_serial = median(step_ms[0]);
  r.decode_tok_s_serial = tpot_serial > 0 ? 1e3 / tpot_serial : 0;
  r.host_gap_us = median(gap_us[1]);
  r.host_gap_serial_us = median(gap_us[0]);
  r.bytes_per_token = runner->weight_bytes_per_token() + kv_bytes / (uint64_t)(o.gen_tokens - 1);
  const double roof = r.read_GBps() * 1e9;
  r.mbu = roof > 0 ? (double)r.bytes_per_token * r.decode_tok_s / roof : 0;
  if (on_host) {
    // MFU: prefill's FLOPs per second over the roof of what the matmuls multiply in.
    TS_ASSIGN_OR_RETURN(r.prefill_flops, prefill_flops(*w, o.prompt_tokens));
    const ComputeDtype dtype = kernels::cpu::matmul_compute_dtype(dtype_from_name(r.weight_type).value_or(DType::f32), o.prompt_tokens);
    const ComputeRoof compute = measure_compute_roof(pool, dtype);
    r.mfu_roof_dtype = std::string(name(dtype));
    r.compute_roof_GFLOPs = compute.GFLOPs;
    r.mfu = compute.GFLOPs > 0 ? r.prefill_flops * r.prefill_tok_s / o.prompt_tokens / (compute.GFLOPs * 1e9) : 0;
  }
  if (o.competing_load) {
    TS_ASSIGN_OR_RETURN(CompetingLoad load, CompetingLoad::start(last_allowed_cpu()));
    log("bench: decoding again beside a busy process on CPU " + std::to_string(load.cpu()));
    std::vector<double> steps;
    const CompetingLoad::Mark a = load.mark();
    for (int run = 0; run < 2; ++run) {
      TS_ASSIGN_OR_RETURN(DecodeTimes dt, run_decode_loop(*runner, kv, {s->id(), s->position(), first, o.gen_tokens - 1, true}));
      steps.insert(steps.end(), dt.step_ms.begin(), dt.step_ms.end());
    }
    const CompetingLoad::Mark b = load.mark();
    const double tpot = median(steps);
    r.decode_tok_s_competing = tpot > 0 ? 1e3 / tpot : 0;
    r.competitor_share = load.share_between(a, b);
    r.competitor_cpu = load.cpu();
  }
  return r;
}

}  // namespace

Expected<std::shared_ptr<const ModelWeights>> load_bench_weights(const BenchOptions& o, ThreadPool& pool,
                                                                  void (*log)(const std::string&)) {
  TS_ASSIGN_OR_RETURN(const DType type, synthetic_weight_type(o.synthetic_type, "--type"));
  if (o.model_path.empty()) {
    const SyntheticSpec spec = default_bench_spec(type);
    log("bench: building the synthetic model (" + std::to_string(synthetic_model_bytes(spec) >> 20) + " MiB of " +
        o.synthetic_type + " weights)");
    TS_ASSIGN_OR_RETURN(ModelWeights w, make_synthetic_llama(spec, pool));
    return std::shared_ptr<const ModelWeights>(std::make_shared<ModelWeights>(std::move(w)));
  }
  TS_ASSIGN_OR_RETURN(ModelWeights w, load_model(o.model_path));
  return std::shared_ptr<const ModelWeights>(std::make_shared<ModelWeights>(std::move(w)));
}

Expected<std::vector<DeviceInfo>> bench_devices(const std::string& backend_name) {
  register_builtin_backends();
  Backend* backend = BackendRegistry::global().find(backend_name);
  if (!backend) return not_found("--backend: '" + backend_name + "' is not available");
  auto devices = backend->enumerate();
  if (devices.empty()) return not_found("--backend " + backend_name + ": no device (" + backend->why_none() + ")");
  return devices;
}

std::string matmul_weight_type(const ModelWeights& w) {
  for (const auto& t : w.tensors)
    if (t.name == "blk.0.attn_q.weight") return std::string(name(t.desc.dtype));
  return "";
}

Expected<std::vector<BenchReport>> bench_backend(const BenchOptions& o, void (*log)(const std::string&)) {
  TS_ASSIGN_OR_RETURN(const auto devices, bench_devices(o.backend));
  ThreadPool pool(cpu::default_cpu_threads());
  const auto t0 = Clock::now();
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const ModelWeights> weights, load_bench_weights(o, pool, log));
  const double build_s = ms_between(t0, Clock::now()) / 1e3;

  std::vector<BenchReport> reports;
  for (size_t i = 0; i < devices.size(); ++i) {
    TS_ASSIGN_OR_RETURN(BenchReport r, bench_device(weights, o, (int)i, pool, log));
    r.model_build_s = build_s;
    reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace tessera
