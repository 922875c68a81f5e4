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
#include "engine/bench/serving_bench.h"
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

Expected<DeviceOpReport> time_device_ops(const std::string& backend, const std::string& op) {
  TS_ASSIGN_OR_RETURN(const auto devices, bench_devices(backend));
  TS_ASSIGN_OR_RETURN(auto device, BackendRegistry::global().find(backend)->open(0));
  DeviceOpOptions o;
  o.op = op;
  return bench_device_ops(*device, devices[0], o);
}

}  // namespace tessera
