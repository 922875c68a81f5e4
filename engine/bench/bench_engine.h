#pragma once
// The serving engine the benches measure (`bench --concurrency`, `bench
// serve`): the bench model's weights on device 0 of the asked-for backend,
// with the bench's limits.
#include <memory>

#include "engine/models/model_weights.h"
#include "engine/serving/serving_engine.h"
#include "tessera/bench.h"

namespace tessera {

struct EngineSpec {
  int32_t max_num_seqs = 1, max_num_batched_tokens = 256, max_prefill_chunk = 0, context = 0;
  SpecConfig spec;  // speculative decoding (off)
};

Expected<std::unique_ptr<ServingEngine>> open_bench_engine(std::shared_ptr<const ModelWeights> w, const ServingBenchOptions& o,
                                                           const EngineSpec& s);

}  // namespace tessera
