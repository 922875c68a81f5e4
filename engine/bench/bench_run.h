#pragma once
// The work behind the public run_bench (include/tessera/bench.h, whose
// BenchOptions and BenchReport it uses): one report per device of the backend.
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "tessera/bench.h"

namespace tessera {

Expected<std::vector<BenchReport>> bench_backend(const BenchOptions& o, void (*log)(const std::string&));

}  // namespace tessera
