// tessera bench: prefill/decode speed, TTFT, TPOT, bytes per token, the
// machine's read bandwidth and MBU, per device.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include <tessera/bench.h>

#include "tools/tessera/cli_common.h"
#include "tools/tessera/engine_flags.h"

namespace tessera::cli {

namespace {

struct BenchFlags {
  std::string model, backend = "cpu", type = "q8_0", passes = "default", tile, place, weight_layout = "auto", kv_type = "auto", op, roofline;
  OpBenchOptions op_sizes;  // --op on the CPU: --m, --k, --n, --heads, ... (type and op set from the flags above)
  KvTransferBenchOptions kv_transfer;  // --op kv_transfer: --kv-block-bytes, --kv-blocks, --reps
  int32_t prompt_tokens = 128, gen_tokens = 32;
  int32_t concurrency = 0, prefix_tokens = 0, long_prompt_tokens = 0;
  std::string prompt, prompt_ids;  // -p / --prompt-ids: the speculative bench's prompt
  EngineFlags engine;
  bool json = false, matmul_layouts = false, batch_invariant = false, competing_load = false;
} f;

void log_line(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

BenchOptions model_options();  // the flags that choose the model and how it runs

nlohmann::json to_json(const BenchReport& r) {
  nlohmann::json j = {
      {"device", r.device.name},
      {"backend", r.device.backend},
      {"kernel_isa", r.device.kernel_isa},
      {"threads", r.device.compute_units},
      {"model", r.model},
      {"weight_type", r.weight_type},
      {"weight_bytes", r.weight_bytes},
      {"prompt_tokens", r.prompt_tokens},
      {"gen_tokens", r.gen_tokens},
      {"prefill_tok_s", r.prefill_tok_s},
      {"decode_tok_s", r.decode_tok_s},
      {"ttft_ms", r.ttft_ms},
      {"tpot_ms", r.tpot_ms},
      {"decode_tok_s_serial", r.decode_tok_s_serial},
      {"host_gap_us", r.host_gap_us},
      {"host_gap_serial_us", r.host_gap_serial_us},
      {"bytes_per_token", r.bytes_per_token},
      {"kv_type", r.kv_type},
      {"kv_budget_bytes", r.kv_budget_bytes},
      {"context_length", r.context_length},
      {"read_GBps", r.read_GBps()},
      {"roof", r.roof},
      {"read_GBps_before", r.read_GBps_before},
      {"read_GBps_after", r.read_GBps_after},
      {"bandwidth_buffer_bytes", r.bandwidth_bytes},
      {"mbu", r.mbu},
      {"prefill_flops", r.prefill_flops},
      {"mfu", r.mfu},
      {"mfu_roof_dtype", r.mfu_roof_dtype},
      {"compute_roof_gflops", r.compute_roof_GFLOPs},
      {"nodes_per_decode_step", r.nodes_per_decode_step},
      {"peak_activation_bytes", r.peak_activation_bytes},
      {"activation_lower_bound_bytes", r.activation_lower_bound_bytes},
      {"model_build_s", r.model_build_s},
      {"passes", f.passes},
      {"batch_invariant", f.batch_invariant},
  };
  j["kv_types"] = nlohmann::json::array();
  for (const KvTypeFigure& k : r.kv_types)
    j["kv_types"].push_back({{"type", k.type}, {"bytes_per_token", k.bytes_per_token}, {"full_context_seqs", k.full_context_seqs}});
  if (r.competitor_cpu >= 0) {
    j["decode_tok_s_competing"] = r.decode_tok_s_competing;
    j["competitor_share"] = r.competitor_share;
    j["competitor_cpu"] = r.competitor_cpu;
  }
  return j;
}

// The measurement behind the CPU's preferred weight layouts (docs/performance.md).
int matmul_layouts_main() {
  const MatmulLayoutReport report = time_matmul_layouts(25);
  std::printf("matmul weight layouts, %d threads, median of 25 runs each, alternating (ms)\n", report.threads);
  std::printf("%-6s %5s %6s %6s %10s %10s %8s %10s %10s %8s\n", "dtype", "m", "n", "k", "rows", "rows_x4", "x4 gain",
              "rows min", "x4 min", "min gain");
  for (const MatmulLayoutTiming& c : report.cases)
    std::printf("%-6s %5lld %6lld %6lld %10.3f %10.3f %7.3fx %10.3f %10.3f %7.3fx\n", c.dtype.c_str(),
                (long long)c.m, (long long)c.n, (long long)c.k, c.rows_ms, c.x4_ms, c.speedup(), c.rows_min_ms, c.x4_min_ms,
                c.min_speedup());
  return 0;
}

// --op matmul: each quantized GEMV against the read roof of the same run.
int matmul_roofs_main() {
  constexpr int64_t kN = 4096, kK = 14336;  // llama-3-8B's ffn_down shape transposed: m=4096 output rows, k=14336
  const MatmulRoofReport report = time_matmul_roofs(kN, kK, 25);
  if (f.json) {
    nlohmann::json cases = nlohmann::json::array();
    for (const MatmulRoofTiming& c : report.cases)
      cases.push_back({{"dtype", c.dtype}, {"kernel", c.kernel}, {"m", c.m}, {"n", c.n}, {"k", c.k},
                       {"weight_bytes", c.weight_bytes}, {"median_ms", c.median_ms}, {"min_ms", c.min_ms},
                       {"GBps", c.GBps}, {"roof_GBps", c.roof_GBps}, {"share_of_roof", c.share_of_roof}});
    std::printf("%s\n", nlohmann::json{{"threads", report.threads}, {"isa", report.isa}, {"cases", cases}}.dump().c_str());
    return 0;
  }
  std::printf("matmul GEMV against the read roof, %d threads, %s kernels, 25 runs each, each paired with a streaming read\n"
              "of as many bytes; medians; %% roof is the median of the per-pair ratios\n",
              report.threads, report.isa.c_str());
  std::printf("%-6s %-32s %5s %6s %6s %9s %9s %8s %10s %7s\n", "dtype", "kernel", "m", "n", "k", "MB", "median ms",
              "GB/s", "roof GB/s", "% roof");
  for (const MatmulRoofTiming& c : report.cases)
    std::printf("%-6s %-32s %5lld %6lld %6lld %9.1f %9.3f %8.1f %10.1f %6.1f%%\n", c.dtype.c_str(), c.kernel.c_str(),
                (long long)c.m, (long long)c.n, (long long)c.k, c.weight_bytes / 1e6, c.median_ms, c.GBps, c.roof_GBps,
                100 * c.share_of_roof);
  return 0;
}

// --op OP on the CPU with sizes: one primitive against the roofs of the same run.
int cpu_op_main(bool type_given) {
  OpBenchOptions o = f.op_sizes;
  // --kv-type is the model flag's; an operator bench of attention or kv_append reads it too ("auto": f32).
  o.kv_type = f.kv_type == "auto" ? "f32" : f.kv_type;
  o.op = f.op;
  o.batch_invariant = f.batch_invariant;
  o.weight_layout = f.weight_layout;
  if (type_given) o.type = f.type;
  auto report = time_cpu_op(o);
  if (!report) return fail(report.status());
  const OpBenchReport& r = *report;
  if (f.json) {
    std::printf("%s\n", nlohmann::json{{"op", r.op},
                                       {"dtype", r.dtype},
                                       {"kernel", r.kernel},
                                       {"shape", r.shape},
                                       {"threads", r.threads},
                                       {"hot", r.hot},
                                       {"copies", r.copies},
                                       {"reps", r.reps},
                                       {"flops", r.flops},
                                       {"bytes", r.bytes},
                                       {"time_us", r.time_us},
                                       {"gflops", r.gflops},
                                       {"gbps", r.gbps},
                                       {"intensity", r.intensity},
                                       {"read_roof_gbps", r.read_roof_gbps},
                                       {"compute_roof_dtype", r.compute_roof_dtype},
                                       {"compute_roof_kernel", r.compute_roof_kernel},
                                       {"compute_roof_gflops", r.compute_roof_gflops},
                                       {"read_roof_fraction", r.read_roof_fraction},
                                       {"compute_roof_fraction", r.compute_roof_fraction},
                                       {"f32_roof_gflops", r.f32_roof_gflops},
                                       {"bf16_roof_gflops", r.bf16_roof_gflops},
                                       {"int8_roof_gflops", r.int8_roof_gflops}}
                                .dump()
                                .c_str());
    return 0;
  }
  std::printf("%s %s (%s), %s, %d threads, %s, median of %d calls\n", r.op.c_str(), r.shape.c_str(), r.dtype.c_str(),
              r.kernel.c_str(), r.threads,
              r.hot ? "one cache-resident copy (--hot)" : ("rotating over " + std::to_string(r.copies) + " copies > 4x LLC").c_str(),
              r.reps);
  std::printf("time            %10.2f us\n", r.time_us);
  std::printf("compute         %10.2f GFLOP/s  %5.1f %% of the %s roof %.0f GFLOP/s (%s)\n", r.gflops,
              100 * r.compute_roof_fraction, r.compute_roof_dtype.c_str(), r.compute_roof_gflops, r.compute_roof_kernel.c_str());
  std::printf("memory          %10.2f GB/s     %5.1f %% of the read roof %.1f GB/s\n", r.gbps, 100 * r.read_roof_fraction,
              r.read_roof_gbps);
  std::printf("intensity       %10.3f FLOP/byte (%.3g FLOPs, %.3g bytes a call)\n", r.intensity, r.flops, r.bytes);
  std::printf("roofs           read %.1f GB/s, f32 %.0f GFLOP/s, bf16 %s, int8 %.0f GOP/s\n", r.read_roof_gbps, r.f32_roof_gflops,
              r.bf16_roof_gflops > 0 ? (std::to_string((long long)r.bf16_roof_gflops) + " GFLOP/s").c_str() : "none",
              r.int8_roof_gflops);
  return 0;
}

// --roofline FILE: every op kind of the model's steps on the machine's roofline.
int roofline_main() {
  auto report = run_roofline(model_options(), log_line);
  if (!report) return fail(report.status());
  const RooflineReport& r = *report;
  std::FILE* out = std::fopen(f.roofline.c_str(), "wb");
  if (!out) return fail(invalid_argument("--roofline: cannot write '" + f.roofline + "'"));
  const bool written = std::fwrite(r.svg.data(), 1, r.svg.size(), out) == r.svg.size();
  if (std::fclose(out) != 0 || !written) return fail(invalid_argument("--roofline: writing '" + f.roofline + "' failed"));
  if (f.json) {
    nlohmann::json points = nlohmann::json::array();
    for (const RooflineOpPoint& p : r.points)
      points.push_back({{"phase", p.phase}, {"op", p.op}, {"calls", p.calls}, {"flops", p.flops}, {"bytes", p.bytes},
                        {"time_us", p.time_us}, {"gflops", p.gflops}, {"gbps", p.gbps}, {"intensity", p.intensity},
                        {"compute_dtype", p.compute_dtype}});
    std::printf("%s\n", nlohmann::json{{"model", r.model}, {"svg", f.roofline}, {"threads", r.threads},
                                       {"read_roof_gbps", r.read_roof_gbps}, {"f32_roof_gflops", r.f32_roof_gflops},
                                       {"bf16_roof_gflops", r.bf16_roof_gflops}, {"int8_roof_gflops", r.int8_roof_gflops},
                                       {"points", points}, {"not_timed", r.not_timed}}
                                .dump()
                                .c_str());
    return 0;
  }
  std::printf("roofline of %s written to %s (read %.1f GB/s, f32 %.0f, bf16 %.0f, int8 %.0f GFLOP/s; %d threads)\n",
              r.model.c_str(), f.roofline.c_str(), r.read_roof_gbps, r.f32_roof_gflops, r.bf16_roof_gflops, r.int8_roof_gflops,
              r.threads);
  std::printf("%-8s %-10s %6s %12s %10s %10s %12s\n", "phase", "op", "calls", "us/step", "GFLOP/s", "GB/s", "FLOP/byte");
  for (const RooflineOpPoint& p : r.points)
    std::printf("%-8s %-10s %6d %12.1f %10.2f %10.2f %12.3f\n", p.phase.c_str(), p.op.c_str(), p.calls, p.time_us, p.gflops, p.gbps,
                p.intensity);
  if (!r.not_timed.empty()) {
    std::string names;
    for (const auto& n : r.not_timed) names += (names.empty() ? "" : ", ") + n;
    std::printf("not timed (no op bench row): %s\n", names.c_str());
  }
  return 0;
}

// --op matmul|attention on a device other than the CPU: through the HAL.
int device_ops_main() {
  auto report = time_device_ops(f.backend, f.op);
  if (!report) return fail(report.status());
  const DeviceOpReport& r = *report;
  if (f.json) {
    nlohmann::json cases = nlohmann::json::array();
    for (const DeviceOpTiming& c : r.cases)
      cases.push_back({{"op", c.op}, {"dtype", c.dtype}, {"m", c.m}, {"n", c.n}, {"k", c.k}, {"bytes", c.bytes},
                       {"median_ms", c.median_ms}, {"min_ms", c.min_ms}, {"GBps", c.GBps()}, {"TFLOPs", c.TFLOPs()},
                       {"share_of_copy", r.copy_GBps > 0 ? c.GBps() / r.copy_GBps : 0.0},
                       {"share_of_matrix", r.matrix_GFLOPs > 0 ? c.TFLOPs() * 1e3 / r.matrix_GFLOPs : 0.0}});
    std::printf("%s\n", nlohmann::json{{"device", r.device.name}, {"backend", r.device.backend}, {"arch", r.device.arch},
                                       {"copy_GBps", r.copy_GBps}, {"matrix_GFLOPs", r.matrix_GFLOPs},
                                       {"matrix_what", r.matrix_what}, {"cases", cases}}
                            .dump()
                            .c_str());
    return 0;
  }
  std::printf("%s [%s:%d, %s]: device-to-device copy %.1f GB/s (read + write, median)\n", r.device.name.c_str(),
              r.device.backend.c_str(), r.device.index, r.device.arch.c_str(), r.copy_GBps);
  if (r.matrix_GFLOPs > 0) std::printf("matrix rate %.1f TFLOP/s (%s)\n", r.matrix_GFLOPs / 1e3, r.matrix_what.c_str());
  else std::printf("matrix rate %s\n", r.matrix_what.c_str());
  std::printf("%-16s %-6s %6s %6s %6s %10s %10s %9s %9s %8s\n", "op", "dtype", "m", "n", "k", "median ms", "min ms", "GB/s",
              "TFLOP/s", "% roof");
  for (const DeviceOpTiming& c : r.cases) {
    const bool gemv = c.op == "matmul" && c.m == 1;
    std::printf("%-16s %-6s %6lld %6lld %6lld %10.4f %10.4f %9.1f %9.2f", c.op.c_str(), c.dtype.c_str(), (long long)c.m,
                (long long)c.n, (long long)c.k, c.median_ms, c.min_ms, gemv ? c.GBps() : 0.0, c.TFLOPs());
    if (gemv && r.copy_GBps > 0) std::printf(" %7.1f%% of copy", 100 * c.GBps() / r.copy_GBps);
    if (!gemv && r.matrix_GFLOPs > 0) std::printf(" %7.1f%% of matrix", 100 * c.TFLOPs() * 1e3 / r.matrix_GFLOPs);
    std::printf("\n");
  }
  std::printf("(matmul: m rows of x, n outputs, k inputs; attention: m query tokens of one sequence, n heads, k head_dim, causal)\n");
  return 0;
}

nlohmann::json to_json(const ServingBenchReport& r) {
  nlohmann::json j = {
      {"device", r.device.name},
      {"backend", r.device.backend},
      {"threads", r.device.compute_units},
      {"model", r.model},
      {"weight_type", r.weight_type},
      {"kv_cache", r.kv_summary},
      {"concurrency", r.concurrency},
      {"prompt_tokens", r.prompt_tokens},
      {"gen_tokens", r.gen_tokens},
      {"single_decode_tok_s", r.single_decode_tok_s},
      {"aggregate_decode_tok_s", r.aggregate_decode_tok_s},
      {"aggregate_speedup", r.speedup()},
      {"requests_per_s", r.requests_per_s},
      {"ttft_p50_ms", r.ttft_p50_ms},
      {"ttft_p99_ms", r.ttft_p99_ms},
      {"tpot_p50_ms", r.tpot_p50_ms},
      {"tpot_p99_ms", r.tpot_p99_ms},
      {"kv_peak_blocks", r.kv_peak_blocks},
      {"mean_tokens_per_step", r.mean_tokens_per_step},
      {"step_ms", r.step_ms},
      {"host_fraction", r.host_fraction},
  };
  if (r.prefix_tokens > 0) {
    j["prefix_tokens"] = r.prefix_tokens;
    j["ttft_cached_ms"] = r.ttft_cached_ms;
    j["ttft_cold_ms"] = r.ttft_cold_ms;
  }
  if (r.long_prompt_tokens > 0) {
    j["long_prompt_tokens"] = r.long_prompt_tokens;
    j["long_prompt_chunk"] = r.long_prompt_chunk;
    j["itl_p99_chunked_ms"] = r.itl_p99_chunked_ms;
    j["itl_p99_unchunked_ms"] = r.itl_p99_unchunked_ms;
    j["itl_max_chunked_ms"] = r.itl_max_chunked_ms;
    j["itl_max_unchunked_ms"] = r.itl_max_unchunked_ms;
  }
  return j;
}

BenchOptions model_options() {
  BenchOptions o;
  o.model_path = f.model;
  o.backend = f.backend;
  o.synthetic_type = f.type;
  o.prompt_tokens = f.prompt_tokens;
  o.gen_tokens = f.gen_tokens;
  o.passes = f.passes;
  o.tile = f.tile;
  o.place = f.place;
  o.weight_layout = f.weight_layout;
  o.kv_type = f.kv_type;
  o.batch_invariant = f.batch_invariant;
  o.competing_load = f.competing_load;
  return o;
}

// --concurrency, --prefix-tokens, --long-prompt-tokens: the serving engine.
int serving_main() {
  ServingBenchOptions o;
  o.model = model_options();
  o.concurrency = f.concurrency > 0 ? f.concurrency : 1;
  f.engine.apply(o);
  o.prefix_tokens = f.prefix_tokens;
  o.long_prompt_tokens = f.long_prompt_tokens;
  auto report = run_serving_bench(o, log_line);
  if (!report) return fail(report.status());
  const ServingBenchReport& r = *report;
  if (f.json) {
    std::printf("%s\n", to_json(r).dump().c_str());
    return 0;
  }
  std::printf("device          %s [%s]\n", r.device.name.c_str(), r.device.backend.c_str());
  std::printf("model           %s (%s)\n", r.model.c_str(), r.weight_type.c_str());
  std::printf("%s\n", r.kv_summary.c_str());
  std::printf("requests        %d at once, %d prompt tokens, %d generated each\n", r.concurrency, r.prompt_tokens, r.gen_tokens);
  std::printf("decode          %8.2f tok/s aggregate, %.2f tok/s one request alone (%.2fx)\n", r.aggregate_decode_tok_s,
              r.single_decode_tok_s, r.speedup());
  std::printf("requests/s      %8.3f\n", r.requests_per_s);
  std::printf("TTFT            %8.1f ms p50, %.1f ms p99\n", r.ttft_p50_ms, r.ttft_p99_ms);
  std::printf("TPOT            %8.2f ms p50, %.2f ms p99\n", r.tpot_p50_ms, r.tpot_p99_ms);
  std::printf("KV peak         %8d blocks\n", r.kv_peak_blocks);
  std::printf("steps           %8.1f tokens/step, %.2f ms/step, engine host time %.2f %% of step time\n", r.mean_tokens_per_step,
              r.step_ms, 100 * r.host_fraction);
  if (r.prefix_tokens > 0)
    std::printf("prefix cache    TTFT %.1f ms with %d prompt tokens cached, %.1f ms cold (%.1f %%)\n", r.ttft_cached_ms,
                r.prefix_tokens, r.ttft_cold_ms, r.ttft_cold_ms > 0 ? 100 * r.ttft_cached_ms / r.ttft_cold_ms : 0.0);
  if (r.long_prompt_tokens > 0)
    std::printf("long prompt     %d tokens arriving: streams' ITL p99 %.1f ms chunked (%d), %.1f ms in one step (max %.1f, %.1f)\n",
                r.long_prompt_tokens, r.itl_p99_chunked_ms, r.long_prompt_chunk, r.itl_p99_unchunked_ms, r.itl_max_chunked_ms,
                r.itl_max_unchunked_ms);
  return 0;
}

// --draft-model, --lookup-ngram, --jacobi: plain decoding against each method, same run.
int spec_main() {
  SpecBenchOptions o;
  o.model = model_options();
  o.methods = f.engine.spec.methods();
  o.prompt_text = f.prompt;
  if (!f.prompt_ids.empty()) {
    auto ids = parse_id_list("--prompt-ids", f.prompt_ids);
    if (!ids) return fail(ids.status());
    o.prompt = *ids;
  }
  auto report = run_spec_bench(o, log_line);
  if (!report) return fail(report.status());
  const SpecBenchReport& r = *report;
  if (f.json) {
    nlohmann::json methods = nlohmann::json::array();
    for (const SpecBenchMethod& m : r.methods)
      methods.push_back({{"method", m.method},
                         {"decode_tok_s", m.decode_tok_s},
                         {"tokens_per_pass", m.tokens_per_pass},
                         {"acceptance_rate", m.acceptance_rate},
                         {"spec_speedup", m.spec_speedup},
                         {"proposed", m.proposed},
                         {"accepted", m.accepted}});
    const nlohmann::json j = {{"device", r.device.name}, {"backend", r.device.backend}, {"model", r.model},
                              {"prompt_tokens", r.prompt_tokens}, {"gen_tokens", r.gen_tokens}, {"identical", r.identical},
                              {"methods", methods}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("device          %s [%s]\n", r.device.name.c_str(), r.device.backend.c_str());
    std::printf("model           %s, %d prompt tokens, %d generated (greedy)\n", r.model.c_str(), r.prompt_tokens, r.gen_tokens);
    for (const SpecBenchMethod& m : r.methods)
      std::printf("%-15s %8.1f tok/s  %.2fx   %.2f tokens/pass, acceptance %.1f %% (%lld of %lld)\n", m.method.c_str(),
                  m.decode_tok_s, m.spec_speedup, m.tokens_per_pass, 100 * m.acceptance_rate, (long long)m.accepted,
                  (long long)m.proposed);
    std::printf("greedy ids      %s\n", r.identical ? "identical for every method" : "DIFFER from the plain decode");
  }
  return r.identical ? 0 : fail(internal_error("bench: a speculative method's greedy ids differ from the plain decode's"));
}

// --op kv_transfer: KV blocks between two UCX workers over loopback against memcpy.
int kv_transfer_main() {
  auto report = time_kv_transfer(f.kv_transfer);
  if (!report) return fail(report.status());
  const KvTransferBenchReport& r = *report;
  if (f.json) {
    nlohmann::json cases = nlohmann::json::array();
    for (const KvTransferTiming& c : r.cases)
      cases.push_back({{"blocks", c.blocks}, {"bytes", c.bytes}, {"tag_GBps", c.tag_GBps}, {"put_GBps", c.put_GBps},
                       {"memcpy_GBps", c.memcpy_GBps}, {"tag_us", c.tag_us}, {"put_us", c.put_us}, {"memcpy_us", c.memcpy_us}});
    std::printf("%s\n", nlohmann::json{{"op", "kv_transfer"}, {"transports", r.transports}, {"block_bytes", f.kv_transfer.block_bytes},
                                       {"reps", f.kv_transfer.reps}, {"cases", cases}}
                             .dump()
                             .c_str());
    return 0;
  }
  std::printf("kv_transfer: blocks of %llu bytes between two UCX workers over loopback (%s), median of %d, against memcpy\n",
              (unsigned long long)f.kv_transfer.block_bytes, r.transports.empty() ? "transport not reported" : r.transports.c_str(),
              f.kv_transfer.reps);
  std::printf("%7s %12s %10s %10s %10s %10s %10s %10s\n", "blocks", "bytes", "tag GB/s", "put GB/s", "copy GB/s", "tag us", "put us",
              "copy us");
  for (const KvTransferTiming& c : r.cases)
    std::printf("%7d %12llu %10.2f %10.2f %10.2f %10.1f %10.1f %10.1f\n", c.blocks, (unsigned long long)c.bytes, c.tag_GBps, c.put_GBps,
                c.memcpy_GBps, c.tag_us, c.put_us, c.memcpy_us);
  return 0;
}

CLI::App* serve_app = nullptr;

CLI::App* bench_app = nullptr;

bool given(const char* flag) { return bench_app->get_option(flag)->count() > 0; }

int bench_main() {
  if (serve_app != nullptr && serve_app->parsed()) return bench_serve_main();
  if (f.matmul_layouts) return matmul_layouts_main();
  if (!f.roofline.empty()) return roofline_main();
  if (f.op == "kv_transfer") return kv_transfer_main();
  if (!f.op.empty() && f.backend != "cpu") {
    if (f.op != "matmul" && f.op != "attention")
      return fail(invalid_argument("--op: '" + f.op + "' on --backend " + f.backend + "; expected matmul or attention"));
    return device_ops_main();
  }
  // --op matmul alone keeps the table of every quantized type; any size or --type times one matmul.
  bool sized = false;
  for (const char* flag : {"--type", "--m", "--k", "--n", "--threads", "--hot"}) sized = sized || given(flag);
  if (f.op == "matmul" && !sized) return matmul_roofs_main();
  if (!f.op.empty()) return cpu_op_main(given("--type"));
  const bool serving = f.concurrency > 0 || f.prefix_tokens > 0 || f.long_prompt_tokens > 0;
  if (serving && !f.engine.spec.methods().empty())
    return fail(invalid_argument("--draft-model, --lookup-ngram, --jacobi: not with --concurrency, --prefix-tokens or --long-prompt-tokens "
                                 "(bench serve measures speculation under load)"));
  if (serving) return serving_main();
  if (!f.engine.spec.methods().empty()) return spec_main();
  if (!f.prompt.empty() || !f.prompt_ids.empty())
    return fail(invalid_argument("-p/--prompt-ids: bench a given prompt with --draft-model, --lookup-ngram or --jacobi"));
  auto reports = run_bench(model_options(), log_line);
  if (!reports) return fail(reports.status());
  if (f.json) {
    // One object: the first device's figures at the top level, every device under "devices".
    nlohmann::json all = nlohmann::json::array();
    for (const auto& r : *reports) all.push_back(to_json(r));
    nlohmann::json top = all[0];
    top["devices"] = all;
    std::printf("%s\n", top.dump().c_str());
    return 0;
  }
  for (const auto& r : *reports) {
    std::printf("device          %s [%s, %s kernels]\n", r.device.name.c_str(), r.device.backend.c_str(), r.device.kernel_isa.c_str());
    std::printf("model           %s (%s, %.2f GB)\n", r.model.c_str(), r.weight_type.c_str(), r.weight_bytes / 1e9);
    std::printf("prefill         %8.1f tok/s  (%d tokens)\n", r.prefill_tok_s, r.prompt_tokens);
    std::printf("decode          %8.2f tok/s  (median of 2 x %d steps; serial loop %.2f tok/s, alternating)\n", r.decode_tok_s,
                r.gen_tokens - 1, r.decode_tok_s_serial);
    std::printf("host gap        %8.1f us between steps (serial loop %.1f us)\n", r.host_gap_us, r.host_gap_serial_us);
    std::printf("TTFT            %8.1f ms\n", r.ttft_ms);
    std::printf("TPOT            %8.2f ms\n", r.tpot_ms);
    std::printf("bytes/token     %8.1f MB\n", r.bytes_per_token / 1e6);
    std::printf("read bandwidth  %8.2f GB/s before, %.2f GB/s after decoding (%llu MiB buffer; %s)\n", r.read_GBps_before,
                r.read_GBps_after, (unsigned long long)(r.bandwidth_bytes >> 20), r.roof.c_str());
    std::printf("MBU             %8.1f %%  (decode)\n", 100 * r.mbu);
    if (!r.mfu_roof_dtype.empty())
      std::printf("MFU             %8.1f %%  (prefill: %.2f GFLOP a prompt against the %s roof, %.0f GFLOP/s)\n", 100 * r.mfu,
                  r.prefill_flops / 1e9, r.mfu_roof_dtype.c_str(), r.compute_roof_GFLOPs);
    std::printf("nodes/step      %8zu   activations %.2f MB planned, %.2f MB lower bound\n", r.nodes_per_decode_step,
                r.peak_activation_bytes / 1e6, r.activation_lower_bound_bytes / 1e6);
    if (r.competitor_cpu >= 0)
      std::printf("competing load  %8.2f tok/s decoding beside a busy process on CPU %d (%.2fx alone); it kept %.0f %% of its rate\n",
                  r.decode_tok_s_competing, r.competitor_cpu, r.decode_tok_s > 0 ? r.decode_tok_s_competing / r.decode_tok_s : 0.0,
                  100 * r.competitor_share);
  }
  return 0;
}

}  // namespace

Subcommand add_bench(CLI::App& app) {
  CLI::App* s = app.add_subcommand("bench", "measure prefill/decode speed against the machine's bandwidth");
  bench_app = s;
  s->add_option("-m,--model", f.model, "model file (default: the synthetic bench model, see docs/performance.md)");
  s->add_option("--backend", f.backend, "backend to measure");
  s->add_option("--type", f.type, "synthetic model weight type: q8_0 (default), q4_0, f16, f32; --op matmul, embedding: the weights' dtype, any the CPU has (default q4_K)");
  s->add_option("--prompt-tokens", f.prompt_tokens, "prompt length for prefill");
  s->add_option("-p,--prompt", f.prompt, "with --draft-model, --lookup-ngram or --jacobi: the prompt to decode from (text)");
  s->add_option("--prompt-ids", f.prompt_ids, "with --draft-model, --lookup-ngram or --jacobi: the prompt as comma-separated ids")
      ->excludes("--prompt");
  s->add_option("--gen-tokens", f.gen_tokens, "tokens to decode");
  s->add_option("--passes", f.passes, "graph passes: default, none, default,-NAME, ... (tessera ir --list-passes)");
  s->add_option("--tile", f.tile, "tile sizes replacing the tiling pass's: OP.FIELD=VALUE,... (docs/ir.md)");
  s->add_option("--place", f.place, "pin nodes to a device: PATTERN=DEVICE,... (docs/ir.md)");
  s->add_option("--weight-layout", f.weight_layout, "matmul weights' block order: auto (the target's preference), rows, rows_x4 or rows_x16 (docs/ir.md)");
  add_kv_type_flag(*s, f.kv_type);
  s->add_option("--concurrency", f.concurrency,
                "instead: N requests at once through the serving engine; aggregate decode tok/s, TTFT, TPOT (docs/performance.md)")
      ->check(CLI::Range(1, 4096));
  s->add_option("--prefix-tokens", f.prefix_tokens, "with the engine: TTFT of requests whose first K prompt tokens are cached, and cold")
      ->check(CLI::Range(1, 1 << 20));
  s->add_option("--long-prompt-tokens", f.long_prompt_tokens,
                "with the engine: running streams' p99 inter-token latency as a prompt of L tokens arrives, chunked and not")
      ->check(CLI::Range(1, 1 << 20));
  f.engine.add(*s, false, true);
  s->add_flag("--batch-invariant", f.batch_invariant,
              "measure with the batch-invariant kernels (docs/backends.md, \"Batch invariance\")");
  s->add_flag("--competing-load", f.competing_load,
              "also decode beside a busy process pinned to one core: tok/s, and how much of its core it kept");
  s->add_flag("--json", f.json, "print one JSON object");
  s->add_flag("--matmul-layouts", f.matmul_layouts,
              "instead: time the q8_0/q4_0 matmul kernels on the standard and the rows_x4 weight layout");
  s->add_option("--op", f.op,
                 "instead: time one op against the roofs of the same run. CPU: matmul, attention, rms_norm, add, silu_mul, "
                 "softmax, argmax, rope, kv_append, gather_rows, embedding, sized by the flags below; kv_transfer: KV blocks over UCX "
                 "on loopback against memcpy (--op matmul alone: the decode "
                 "GEMV of every quantized type, 4096 x 14336); --backend cuda, rocm, vulkan: matmul or attention "
                 "(docs/performance.md)");
  OpBenchOptions& o = f.op_sizes;
  s->add_option("--m", o.m, "--op matmul: weight rows (outputs); embedding: table rows (default 4096)");
  s->add_option("--k", o.k, "--op matmul: inputs, a multiple of the type's block; row ops, embedding: row width (default 4096)");
  s->add_option("--n", o.n, "--op: tokens (x rows) of matmul, rope, kv_append, embedding; rows of the row ops (default 1)");
  s->add_option("--heads", o.heads, "--op attention, rope: query heads (default 32)");
  s->add_option("--kv-heads", o.kv_heads, "--op attention, kv_append: KV heads (default 8)");
  s->add_option("--head-dim", o.head_dim, "--op attention, rope, kv_append: head size (default 128)");
  s->add_option("--ctx", o.ctx, "--op attention: the sequence's KV positions; kv_append: the pool's (default 4096)");
  s->add_option("--q-len", o.q_len, "--op attention: query tokens at the end of the context (default 1)");
  s->add_option("--threads", o.threads, "--op: threads (default: the CPU backend's)");
  s->add_option("--kv-block-bytes", f.kv_transfer.block_bytes, "--op kv_transfer: bytes of one KV block (default 32768)");
  s->add_option("--kv-blocks", f.kv_transfer.blocks, "--op kv_transfer: blocks per transfer, one size each (default 1,16,128,1024)")
      ->delimiter(',');
  s->add_option("--reps", f.kv_transfer.reps, "--op kv_transfer: transfers timed per size (default 20)");
  s->add_flag("--hot", o.hot, "--op: time one cache-resident copy of the inputs instead of rotating over copies larger than the LLC");
  s->add_option("--roofline", f.roofline,
                "instead: draw every op kind of the model's decode and prefill steps on the CPU's roofline into this SVG "
                "file (-m MODEL or the synthetic bench model; --prompt-tokens)");
  serve_app = add_bench_serve(*s);
  return {s, bench_main};
}

}  // namespace tessera::cli
