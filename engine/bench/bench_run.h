#pragma once
// The work behind the public run_bench (include/tessera/bench.h, whose
// BenchOptions and BenchReport it uses): one report per device of the backend.
#include <string>
#include <vector>

#include <memory>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "engine/models/model_weights.h"
#include "core/status.h"
#include "tessera/bench.h"

namespace tessera {

Expected<std::vector<BenchReport>> bench_backend(const BenchOptions& o, void (*log)(const std::string&));

// What every bench measures on: the model file, or the synthetic bench model
// of o.synthetic_type; the backend's devices (none is an error naming it);
// the matmul weights' type name.
Expected<std::shared_ptr<const ModelWeights>> load_bench_weights(const BenchOptions& o, ThreadPool& pool,
                                                                  void (*log)(const std::string&));
Expected<std::vector<DeviceInfo>> bench_devices(const std::string& backend);
std::string matmul_weight_type(const ModelWeights& w);

}  // namespace tessera
