#pragma once
// The work behind the public run_serving_bench (include/tessera/bench.h).
#include <string>

#include "core/status.h"
#include "tessera/bench.h"

namespace tessera {

Expected<ServingBenchReport> serving_bench(const ServingBenchOptions& o, void (*log)(const std::string&));

}  // namespace tessera
