#pragma once
// `tessera bench`: prefill and decode a model (by default a synthetic llama
// far larger than any cache) on every device of a backend, and report the
// speeds against the read bandwidth measured right before and after decoding.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/device_info.h"
#include "tessera/engine.h"
#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

struct BenchOptions {
  std::string model_path;  // empty: the synthetic bench model
  std::string backend = "cpu";
  std::string synthetic_type = "q8_0";  // q8_0, q4_0, f16 or f32
  int32_t prompt_tokens = 128;
  int32_t gen_tokens = 32;
  uint64_t seed = 1;
  std::string passes = "default";  // graph passes (docs/ir.md)
  std::string tile;                // tile overrides (docs/ir.md)
  std::string place;   // --place: nodes pinned to a device
  std::string weight_layout = "auto";  // --weight-layout (docs/ir.md)
  bool batch_invariant = false;        // --batch-invariant (docs/backends.md, "Batch invariance")
  std::string kv_type = "auto";        // --kv-type: f32, f16, bf16, q8_0, fp8_e4m3 or auto (ModelOptions::kv_type)
  bool competing_load = false;         // --competing-load: decode again beside a busy process on one core
};

// What one KV pool type costs this model (computed, not run): the K and V
// bytes of one token over every layer, and how many sequences of the
// model's whole context the device's default KV budget holds in it.
struct KvTypeFigure {
  std::string type;
  uint64_t bytes_per_token = 0;
  uint64_t full_context_seqs = 0;
};

struct BenchReport {
  DeviceInfo device;
  std::string model;        // the file, or the synthetic shape
  std::string weight_type;  // of the matmul weights
  uint64_t weight_bytes = 0;
  int32_t prompt_tokens = 0, gen_tokens = 0;
  double prefill_tok_s = 0, decode_tok_s = 0, ttft_ms = 0, tpot_ms = 0;
  // Decode measured two ways in one run, alternating A B A B (engine/bench/decode_loop.h):
  // decode_tok_s / tpot_ms are the overlapped loop's (device greedy, next step
  // prepared while one runs), decode_tok_s_serial the serial loop's (logits to
  // the host, sampled there, then the next step built).
  double decode_tok_s_serial = 0;
  double host_gap_us = 0, host_gap_serial_us = 0;  // medians: host time from one step's end to the next's submit
  uint64_t bytes_per_token = 0;  // weights + the KV cache read by one decode step, averaged
  std::string kv_type;           // the KV pools' element type the bench ran with (bytes_per_token counts it)
  // Every KV type the model can take (q8_0 and fp8_e4m3 where head_dim is a
  // multiple of 32) against kv_budget_bytes, the budget the engine gives the
  // KV cache on this device by default, for sequences of context_length.
  std::vector<KvTypeFigure> kv_types;
  uint64_t kv_budget_bytes = 0;
  int32_t context_length = 0;
  // The memory roof, measured before and after the timed runs: the host's
  // streaming read for the CPU; for any other device its device-to-device
  // copy (read plus write, engine/bench/device_ops.h), named by roof.
  double read_GBps_before = 0, read_GBps_after = 0;
  std::string roof = "host streaming read";
  double mbu = 0;  // bytes_per_token * decode_tok_s / max(read_GBps_before, read_GBps_after)
  // Prefill's model FLOPs per second over the compute roof of the dtype the
  // matmuls run in (core/compute_roofs.h), measured in the run; CPU only (0 elsewhere).
  double prefill_flops = 0;  // FLOPs of one prefill of prompt_tokens (engine/bench/op_table.h's counts)
  double mfu = 0;
  std::string mfu_roof_dtype;  // "int8", "f32", ...
  double compute_roof_GFLOPs = 0;
  uint64_t bandwidth_bytes = 0;
  size_t nodes_per_decode_step = 0;  // graph nodes a decode step runs: not kernel launches on every backend
  uint64_t peak_activation_bytes = 0, activation_lower_bound_bytes = 0;
  double model_build_s = 0;
  // --competing-load: decode tok/s (median step) while another process
  // spins on CPU competitor_cpu, and the share of that process's own rate
  // (measured alone just before) it kept meanwhile: 1 means our threads
  // took nothing from it.
  double decode_tok_s_competing = 0, competitor_share = 0;
  int competitor_cpu = -1;
  double read_GBps() const { return read_GBps_before > read_GBps_after ? read_GBps_before : read_GBps_after; }
};

// One report per device of the backend. Progress lines go to `log` (stderr).
TESSERA_API Expected<std::vector<BenchReport>> run_bench(const BenchOptions& o, void (*log)(const std::string&));

// `tessera bench --concurrency N`: the serving engine on the bench model
// (device 0 of the backend). Single-stream decode first, then N requests at
// once, then single-stream again (the baseline is the median of the two);
// optionally cached against cold TTFT (prefix_tokens) and the running
// streams' inter-token latency when a long prompt arrives, its prefill
// chunked and not (long_prompt_tokens). docs/performance.md says how each
// figure is taken.
struct ServingBenchOptions {
  BenchOptions model;                    // model, backend, type, prompt and generated tokens, passes
  int32_t concurrency = 16;
  int32_t max_num_batched_tokens = 256;  // >= concurrency (raised to it)
  int32_t max_prefill_chunk = 0;         // 0: max_num_batched_tokens
  uint64_t kv_cache_memory = 0;          // 0: the engine's default
  bool prefix_caching = true;
  std::string schedule = "fcfs";  // or "slo" with the targets below (EngineOptions)
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  int32_t prefix_tokens = 0;       // > 0: TTFT of requests whose first K prompt tokens are cached, and cold
  int32_t long_prompt_tokens = 0;  // > 0: p99 inter-token latency of 4 running streams as such a prompt arrives
  EngineOptions::Speculative speculative;  // `bench serve`'s in-process engine (the other serving benches ignore it)
};

struct ServingBenchReport {
  DeviceInfo device;
  std::string model, weight_type;
  std::string kv_summary;  // the engine's start line
  int32_t concurrency = 0, prompt_tokens = 0, gen_tokens = 0;
  double single_decode_tok_s = 0;     // one request alone: 1 / its TPOT (median of the two runs)
  // N requests at once: generated tokens per second while all N decode
  // (from the last first token to the first finish).
  double aggregate_decode_tok_s = 0;
  double speedup() const { return single_decode_tok_s > 0 ? aggregate_decode_tok_s / single_decode_tok_s : 0; }
  double requests_per_s = 0;          // N / the time until the last finished
  double ttft_p50_ms = 0, ttft_p99_ms = 0, tpot_p50_ms = 0, tpot_p99_ms = 0;
  int32_t kv_peak_blocks = 0;
  double mean_tokens_per_step = 0;
  double host_fraction = 0;  // the engine's time outside model steps / time in them, over the concurrent run
  double step_ms = 0;        // mean model step while N ran
  int32_t prefix_tokens = 0;
  double ttft_cached_ms = 0, ttft_cold_ms = 0;  // medians
  int32_t long_prompt_tokens = 0;
  double itl_p99_chunked_ms = 0, itl_p99_unchunked_ms = 0;
  double itl_max_chunked_ms = 0, itl_max_unchunked_ms = 0;
  int32_t long_prompt_chunk = 0;  // the chunk used for the chunked run
};

// `tessera bench --draft-model F / --lookup-ngram N / --jacobi K`: one
// greedy request (the given prompt, or prompt_tokens random ids) decoded
// plainly and with each speculative method, rounds alternating among them
// in one run; per method its decode tok/s (median over rounds), tokens per
// target pass, acceptance rate and speed-up over the plain decode.
struct SpecBenchOptions {
  BenchOptions model;
  std::vector<int32_t> prompt;  // empty: model.prompt_tokens random ids
  std::string prompt_text;      // or text, encoded with the model's tokenizer
  std::vector<EngineOptions::Speculative> methods;
  int32_t rounds = 3;
};
struct SpecBenchMethod {
  std::string method;   // "none" for the plain decode
  double decode_tok_s = 0;      // median over rounds: (generated - 1) / (finish - first token)
  double tokens_per_pass = 0;   // generated tokens / target passes
  double acceptance_rate = 0;   // accepted / proposed
  double spec_speedup = 0;      // decode_tok_s / the plain decode's
  int64_t proposed = 0, accepted = 0;
  std::vector<int32_t> ids;     // the generated ids of the last round (every method's must be the plain one's)
};
struct SpecBenchReport {
  DeviceInfo device;
  std::string model;
  int32_t prompt_tokens = 0, gen_tokens = 0;
  std::vector<SpecBenchMethod> methods;  // plain first
  bool identical = true;                 // every method's greedy ids equal the plain decode's
};
TESSERA_API Expected<SpecBenchReport> run_spec_bench(const SpecBenchOptions& o, void (*log)(const std::string&));

TESSERA_API Expected<ServingBenchReport> run_serving_bench(const ServingBenchOptions& o, void (*log)(const std::string&));

// The measurement behind the CPU's preferred weight layout (docs/performance.md):
// the quantized matmul kernel on the standard layout and on rows_x4, same
// weights, same input, timed alternately so that both see the same machine noise.
struct MatmulLayoutTiming {
  std::string dtype;  // "q8_0" or "q4_0"
  int64_t m = 1, n = 4096, k = 4096;
  double rows_ms = 0, x4_ms = 0;          // medians
  double rows_min_ms = 0, x4_min_ms = 0;  // fastest runs: less swayed by other load on a shared host
  double speedup() const { return x4_ms > 0 ? rows_ms / x4_ms : 0; }
  double min_speedup() const { return x4_min_ms > 0 ? rows_min_ms / x4_min_ms : 0; }
};

struct MatmulLayoutReport {
  int32_t threads = 0;  // the CPU backend's default thread count
  std::vector<MatmulLayoutTiming> cases;
};

// Every (dtype, shape) of llama-7B's projections, m = 1 and 64, for q8_0 and
// q4_0; `reps` timed runs of each layout after one warm-up of each.
TESSERA_API MatmulLayoutReport time_matmul_layouts(int reps);

// The CPU's quantized GEMV (m = 1) against the read roof measured in the
// same run (docs/performance.md): per weight dtype with integer tiles, the
// median of `reps` runs, each streaming its weights from memory and paired
// with a streaming read of as many bytes.
struct MatmulRoofTiming {
  std::string dtype, kernel;  // "q4_K", "q4_K_gemv__avx512vnni"
  int64_t m = 1, n = 4096, k = 14336;
  uint64_t weight_bytes = 0;
  double median_ms = 0, min_ms = 0, GBps = 0;  // GBps: weight_bytes / median_ms
  double roof_GBps = 0;                        // median of the paired reads
  double share_of_roof = 0;                    // median over runs of run GB/s / paired read GB/s
};

struct MatmulRoofReport {
  int32_t threads = 0;
  std::string isa;  // the kernels' ISA family
  std::vector<MatmulRoofTiming> cases;
};

TESSERA_API MatmulRoofReport time_matmul_roofs(int64_t n, int64_t k, int reps);

// `tessera bench --op OP` on the CPU (engine/bench/op_bench.h): one
// primitive timed after a warm-up over many calls, each on the next of
// several copies of its inputs larger together than 4x the last-level cache
// (hot: one copy, cache-resident), against the read roof and the compute
// roof of the dtype it runs in, both measured in the same run.
struct OpBenchOptions {
  std::string op;              // matmul, attention, rms_norm, add, silu_mul, softmax, argmax, rope, kv_append, gather_rows, embedding
  std::string type = "q4_K";   // matmul's weights, embedding's table
  int64_t m = 4096, k = 4096, n = 1;  // matmul: m weight rows, k inputs, n tokens; row ops: n rows of k
  int32_t heads = 32, kv_heads = 8, head_dim = 128, ctx = 4096, q_len = 1;
  std::string kv_type = "f32";
  int32_t threads = 0;  // 0: the CPU backend's default
  bool hot = false;
  bool batch_invariant = false;  // matmul: the batch-invariant kernels (docs/backends.md)
  std::string weight_layout = "auto";  // matmul: the weight's layout, auto (the CPU's preference), rows, rows_x4, rows_x16
};

struct OpBenchReport {
  std::string op, dtype, kernel;
  std::string shape;  // the sizes it ran, e.g. "m=4096 k=14336 n=1"
  int32_t threads = 0, copies = 0, reps = 0;
  bool hot = false;
  double flops = 0, bytes = 0;  // one call; multiply-add counted as 2
  double time_us = 0;           // median
  double gflops = 0, gbps = 0, intensity = 0;
  double read_roof_gbps = 0;                   // the higher of the reads before and after timing
  std::string compute_roof_dtype;              // "int8", "f32", "bf16"
  std::string compute_roof_kernel;             // the probe's loop, "none" where the CPU has no such instruction
  double compute_roof_gflops = 0;              // 0 where none
  double read_roof_fraction = 0, compute_roof_fraction = 0;
  double f32_roof_gflops = 0, bf16_roof_gflops = 0, int8_roof_gflops = 0;  // every roof of the run
};

TESSERA_API Expected<OpBenchReport> time_cpu_op(const OpBenchOptions& o);

// `tessera bench --roofline out.svg`: every op kind of the model's decode
// and prefill steps (the unfused graph) timed at its shapes and drawn on
// the machine's roofline; `svg` is the file's text.
struct RooflineOpPoint {
  std::string phase, op, compute_dtype;
  int32_t calls = 0;
  double flops = 0, bytes = 0, time_us = 0, gflops = 0, gbps = 0, intensity = 0;
};

struct RooflineReport {
  std::string model, svg;
  int32_t threads = 0;
  double read_roof_gbps = 0, f32_roof_gflops = 0, bf16_roof_gflops = 0, int8_roof_gflops = 0;
  std::vector<RooflineOpPoint> points;
  std::vector<std::string> not_timed;
};

TESSERA_API Expected<RooflineReport> run_roofline(const BenchOptions& o, void (*log)(const std::string&));

// Operator benchmarks on a GPU (or any device) through the HAL
// (engine/bench/device_ops.h): GEMVs at m = 1 against the device's copy
// bandwidth measured in the same run, a prefill GEMM's rate, and a
// FlashAttention-style prefill's.
struct DeviceOpTiming {
  std::string op;     // "matmul" or "paged_attention"
  std::string dtype;  // the weights' ("q4_K"); "f32" for attention (the KV pools')
  int64_t m = 0, n = 0, k = 0;  // matmul: y[m, n] = x[m, k] · wᵀ; attention: m query tokens, n heads, k head_dim
  uint64_t bytes = 0;           // weight bytes read (matmul), 0 for attention
  double flops = 0;             // multiply-adds counted as 2; attention: causal, QKᵀ and PV
  double median_ms = 0, min_ms = 0;
  double GBps() const { return median_ms > 0 ? bytes / median_ms / 1e6 : 0; }
  double TFLOPs() const { return median_ms > 0 ? flops / median_ms / 1e9 : 0; }
};

struct DeviceOpReport {
  DeviceInfo device;
  double copy_GBps = 0;  // device-to-device copy, read plus write, median
  // The matrix instruction's dense rate, measured by the device's probe
  // (Device::measure_matrix_rate); 0 with the reason in matrix_what where it has none.
  double matrix_GFLOPs = 0;
  std::string matrix_what;
  std::vector<DeviceOpTiming> cases;
};

TESSERA_API Expected<DeviceOpReport> time_device_ops(const std::string& backend, const std::string& op);

// `tessera bench --op kv_transfer` (engine/disagg/kv_transfer_bench.h): KV
// blocks moved between two UCX workers of this process over a loopback
// listener, as prefill/decode disaggregation moves them, against a plain
// memcpy of the same bytes. Each size is `blocks` blocks of block_bytes sent
// as one transfer: a tagged message, and a one-sided put into registered memory.
struct KvTransferBenchOptions {
  uint64_t block_bytes = 32768;             // one layer's K (or V) block: 16 tokens x 8 KV heads x 128 x f16
  std::vector<int32_t> blocks = {1, 16, 128, 1024};  // blocks per transfer
  int32_t reps = 20;                        // transfers timed per size (median)
};

struct KvTransferTiming {
  int32_t blocks = 0;
  uint64_t bytes = 0;
  double tag_GBps = 0, put_GBps = 0, memcpy_GBps = 0;  // bytes / median time
  double tag_us = 0, put_us = 0, memcpy_us = 0;        // median per transfer
};

struct KvTransferBenchReport {
  std::string transports;  // what UCX chose for the endpoint ("tcp", "posix,cma", ...)
  std::vector<KvTransferTiming> cases;
};

// unsupported "built without UCX" where the build has no UCX.
TESSERA_API Expected<KvTransferBenchReport> time_kv_transfer(const KvTransferBenchOptions& o);

}  // namespace tessera
