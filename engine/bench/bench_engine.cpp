#include "engine/bench/bench_engine.h"

#include <algorithm>

namespace tessera {

Expected<std::unique_ptr<ServingEngine>> open_bench_engine(std::shared_ptr<const ModelWeights> w, const ServingBenchOptions& o,
                                                           const EngineSpec& s) {
  RunnerOptions ro;
  ro.backend = o.model.backend;
  ro.device = 0;
  ro.max_context = s.context;
  ro.passes = o.model.passes;
  ro.tile = o.model.tile;
  ro.place = o.model.place;
  ro.weight_layout = o.model.weight_layout;
  ro.kv_type = o.model.kv_type;
  ro.batch_invariant = o.model.batch_invariant;
  ro.kv_cache_bytes = o.kv_cache_memory;
  if (ro.kv_cache_bytes == 0) ro.kv_memory_fraction = -1;
  EngineConfig ec;
  ec.scheduler.max_num_seqs = s.max_num_seqs;
  ec.scheduler.max_num_batched_tokens = std::max(s.max_num_batched_tokens, s.max_num_seqs);
  ec.scheduler.max_prefill_chunk = s.max_prefill_chunk;
  ec.prefix_caching = o.prefix_caching;
  TS_ASSIGN_OR_RETURN(ec.scheduler.policy, parse_schedule_policy(o.schedule));
  ec.scheduler.slo_ttft_ms = o.slo_ttft_ms;
  ec.scheduler.slo_tpot_ms = o.slo_tpot_ms;
  ec.spec = s.spec;
  return ServingEngine::create(std::move(w), nullptr, ro, ec);
}

}  // namespace tessera
