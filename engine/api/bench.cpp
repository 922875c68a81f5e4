// run_bench, time_matmul_layouts and time_matmul_roofs: the bench's public entry points. They
// are defined here, in the objects libtessera.so is made of, so that the
// linker takes the engine/bench code they call from the static libraries.
#include "backends/cpu/cpu_device.h"
#include "core/thread_pool.h"
#include "core/hal/registry.h"
#include "engine/bench/bench_run.h"
#include "engine/bench/device_ops.h"
#include "engine/bench/matmul_layouts.h"
#include "engine/bench/matmul_roofs.h"
#include "engine/bench/op_bench.h"
#include "engine/bench/roofline.h"
#include "engine/bench/serving_bench.h"
#include "engine/disagg/kv_transfer_bench.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tessera/bench.h"

namespace tessera {

Expected<std::vector<BenchReport>> run_bench(const BenchOptions& o, void (*log)(const std::string&)) {
  return bench_backend(o, log);
}

Expected<ServingBenchReport> run_serving_bench(const ServingBenchOptions& o, void (*log)(const std::string&)) {
  return serving_bench(o, log);
}

MatmulLayoutReport time_matmul_layouts(int reps) {
  ThreadPool pool(cpu::default_cpu_threads());
  MatmulLayoutReport report;
  report.threads = pool.num_threads();
  for (const MatmulLayoutCase& c : bench_matmul_layouts(pool, reps))
    report.cases.push_back({std::string(name(c.dtype)), c.m, c.n, c.k, c.rows_ms, c.x4_ms, c.rows_min_ms, c.x4_min_ms});
  return report;
}

MatmulRoofReport time_matmul_roofs(int64_t n, int64_t k, int reps) {
  ThreadPool pool(cpu::default_cpu_threads());
  MatmulRoofReport report;
  report.threads = pool.num_threads();
  report.isa = std::string(kernels::cpu::name(kernels::cpu::active_isa()));
  for (const MatmulRoofCase& c : bench_matmul_roofs(pool, n, k, reps))
    report.cases.push_back({std::string(name(c.dtype)), c.kernel, c.m, c.n, c.k, c.weight_bytes, c.median_ms, c.min_ms,
                            c.GBps(), c.roof_GBps, c.share_of_roof});
  return report;
}

Expected<KvTransferBenchReport> time_kv_transfer(const KvTransferBenchOptions& o) { return disagg::bench_kv_transfer(o); }

Expected<OpBenchReport> time_cpu_op(const OpBenchOptions& o) {
  OpShape shape;
  shape.op = o.op;
  const auto type = dtype_from_name(o.type);
  if (!type) return invalid_argument("--type: '" + o.type + "' is not a dtype; expected f32, f16, bf16 or a block type (q4_K, q8_0, ...)");
  const auto kv_type = dtype_from_name(o.kv_type);
  if (!kv_type) return invalid_argument("--kv-type: '" + o.kv_type + "' is not a dtype; expected f32, f16, bf16, q8_0 or fp8_e4m3");
  shape.dtype = *type, shape.kv_dtype = *kv_type;
  shape.batch_invariant = o.batch_invariant;
  if (o.weight_layout != "auto") {
    const auto layout = weight_layout_from_name(o.weight_layout);
    if (!layout) return invalid_argument("--weight-layout: '" + o.weight_layout + "' is not auto, rows, rows_x4 or rows_x16");
    if (o.op == "matmul") TS_TRY(check_weight_layout(*layout, shape.dtype, Shape{o.m, o.k}, "--weight-layout"));
    shape.w_layout = *layout;
  }
  shape.m = o.m, shape.k = o.k, shape.n = o.n;
  shape.heads = o.heads, shape.kv_heads = o.kv_heads, shape.head_dim = o.head_dim, shape.ctx = o.ctx, shape.q_len = o.q_len;
  if (o.threads < 0) return invalid_argument("--threads: expected a positive number of threads, got " + std::to_string(o.threads));
  ThreadPool pool(o.threads > 0 ? o.threads : cpu::default_cpu_threads());

  // The roofs around the timing (the read roof moves on a shared host: the higher of two reads, as MBU's).
  const MachineRoofs before = measure_machine_roofs(pool);
  TS_ASSIGN_OR_RETURN(const OpTiming t, time_op(pool, shape, o.hot));
  const MachineRoofs after = measure_machine_roofs(pool);

  OpBenchReport r;
  r.op = o.op;
  r.dtype = o.op == "matmul" || o.op == "embedding" ? std::string(name(shape.dtype))
            : o.op == "attention" || o.op == "kv_append" ? std::string(name(shape.kv_dtype))
                                                       : "f32";
  r.kernel = t.cost.kernel;
  const OpShape& s = shape;
  if (o.op == "attention")
    r.shape = "heads=" + std::to_string(s.heads) + " kv_heads=" + std::to_string(s.kv_heads) + " head_dim=" +
              std::to_string(s.head_dim) + " ctx=" + std::to_string(s.ctx) + " q_len=" + std::to_string(s.q_len);
  else if (o.op == "rope") r.shape = "n=" + std::to_string(s.n) + " heads=" + std::to_string(s.heads) + " head_dim=" + std::to_string(s.head_dim);
  else if (o.op == "kv_append")
    r.shape = "n=" + std::to_string(s.n) + " kv_heads=" + std::to_string(s.kv_heads) + " head_dim=" + std::to_string(s.head_dim) +
              " ctx=" + std::to_string(s.ctx);
  else if (o.op == "matmul" || o.op == "embedding")
    r.shape = "m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n);
  else r.shape = "n=" + std::to_string(s.n) + " k=" + std::to_string(s.k);
  r.threads = pool.num_threads();
  r.copies = t.copies, r.reps = t.reps, r.hot = t.hot;
  r.flops = t.cost.flops, r.bytes = t.cost.bytes;
  r.time_us = t.time_us;
  r.gflops = t.gflops(), r.gbps = t.gbps(), r.intensity = t.intensity();
  r.read_roof_gbps = std::max(before.read_GBps, after.read_GBps);
  const ComputeRoof& c = before.of(t.cost.compute).GFLOPs >= after.of(t.cost.compute).GFLOPs ? before.of(t.cost.compute)
                                                                                              : after.of(t.cost.compute);
  r.compute_roof_dtype = std::string(name(t.cost.compute));
  r.compute_roof_kernel = c.kernel;
  r.compute_roof_gflops = c.GFLOPs;
  r.read_roof_fraction = r.read_roof_gbps > 0 ? r.gbps / r.read_roof_gbps : 0;
  r.compute_roof_fraction = c.GFLOPs > 0 ? r.gflops / c.GFLOPs : 0;
  auto best = [&](ComputeDtype d) { return std::max(before.of(d).GFLOPs, after.of(d).GFLOPs); };
  r.f32_roof_gflops = best(ComputeDtype::f32_fma);
  r.bf16_roof_gflops = best(ComputeDtype::bf16_dot);
  r.int8_roof_gflops = best(ComputeDtype::int8_dot);
  return r;
}

Expected<RooflineReport> run_roofline(const BenchOptions& o, void (*log)(const std::string&)) {
  if (o.backend != "cpu") return invalid_argument("--roofline: draws the CPU's roofline; --backend " + o.backend + " has none yet");
  if (o.prompt_tokens < 1) return invalid_argument("--prompt-tokens: expected at least 1, got " + std::to_string(o.prompt_tokens));
  ThreadPool pool(cpu::default_cpu_threads());
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const ModelWeights> w, load_bench_weights(o, pool, log));
  if (o.prompt_tokens + 1 > w->config.context_length)
    return invalid_argument("--prompt-tokens: " + std::to_string(o.prompt_tokens) + " plus the decoded token exceed the model's context " +
                            std::to_string(w->config.context_length));
  TS_ASSIGN_OR_RETURN(const Roofline line, measure_roofline(pool, *w, o.prompt_tokens, log));
  RooflineReport r;
  r.model = line.model;
  r.svg = roofline_svg(line);
  r.threads = line.threads;
  r.read_roof_gbps = line.roofs.read_GBps;
  r.f32_roof_gflops = line.roofs.of(ComputeDtype::f32_fma).GFLOPs;
  r.bf16_roof_gflops = line.roofs.of(ComputeDtype::bf16_dot).GFLOPs;
  r.int8_roof_gflops = line.roofs.of(ComputeDtype::int8_dot).GFLOPs;
  for (const RooflinePoint& p : line.points)
    r.points.push_back({p.phase, p.op, std::string(name(p.compute)), p.calls, p.flops, p.bytes, p.time_us, p.gflops(), p.gbps(),
                        p.intensity()});
  r.not_timed = line.not_timed;
  return r;
}

Expected<DeviceOpReport> time_device_ops(const std::string& backend, const std::string& op) {
  TS_ASSIGN_OR_RETURN(const auto devices, bench_devices(backend));
  TS_ASSIGN_OR_RETURN(auto device, BackendRegistry::global().find(backend)->open(0));
  DeviceOpOptions o;
  o.op = op;
  return bench_device_ops(*device, devices[0], o);
}

}  // namespace tessera
