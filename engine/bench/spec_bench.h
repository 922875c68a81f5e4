#pragma once
// The work behind the public run_spec_bench (include/tessera/bench.h).
#include <string>

#include "core/status.h"
#include "tessera/bench.h"

namespace tessera {

Expected<SpecBenchReport> spec_bench(const SpecBenchOptions& o, void (*log)(const std::string&));

}  // namespace tessera
