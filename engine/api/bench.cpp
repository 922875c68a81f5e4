// run_bench and time_matmul_layouts: the bench's public entry points. They
// are defined here, in the objects libtessera.so is made of, so that the
// linker takes the engine/bench code they call from the static libraries.
#include "backends/cpu/cpu_device.h"
#include "core/thread_pool.h"
#include "engine/bench/bench_run.h"
#include "engine/bench/matmul_layouts.h"
#include "engine/bench/serving_bench.h"
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

}  // namespace tessera
