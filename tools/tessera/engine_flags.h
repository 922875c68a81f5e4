#pragma once
// Flags `run`, `bench` and the server share: where the model runs (ModelFlags)
// and the engine's limits and memory (EngineFlags).
#include <cstdint>
#include <string>
#include <vector>

#include <tessera/bench.h>
#include <tessera/engine.h>

namespace CLI {
class App;
}

namespace tessera::cli {

// --kv-type, for the commands that open a model without ModelFlags (bench, ir).
void add_kv_type_flag(CLI::App& app, std::string& kv_type);

// Whether the command line parsed asks for several ranks (--tensor-parallel
// or --pipeline-parallel above 1): main() makes a rank other than 0 follow
// rank 0 instead of running the command.
bool& parallel_requested();

struct ModelFlags {
  std::string backend = "cpu", passes = "default", tile, place, weight_layout = "auto", kv_type = "auto";
  int device = 0;
  int32_t tensor_parallel = 1;
  int32_t pipeline_parallel = 1;
  int32_t ctx = 0;
  bool strict = false;
  bool batch_invariant = false;
  void add(CLI::App& app);
  ModelOptions options(const std::string& model, const std::string& tokenizer) const;
};

// Speculative decoding: --draft-model, --lookup-ngram or --jacobi (one of
// them for an engine; bench measures each one given), --spec-tokens.
struct SpecFlags {
  std::string draft_model;
  int32_t spec_tokens = 4;
  int32_t lookup_ngram = 0;
  int32_t jacobi = 0;
  bool fixed_k = false;
  // exclusive: the three methods exclude each other (an engine speculates one way).
  void add(CLI::App& app, bool exclusive = true);
  // Every method given, in the order draft, ngram, jacobi.
  std::vector<EngineOptions::Speculative> methods() const;
  // The first of them ("none" when none is given).
  EngineOptions::Speculative first() const;
};

struct EngineFlags {
  int32_t max_num_seqs = 16;
  int32_t max_num_batched_tokens = 256;
  int32_t max_prefill_chunk = 0;
  uint64_t kv_cache_memory = 0;
  bool no_prefix_cache = false;
  int32_t pipeline_batches = 0;
  std::string schedule = "fcfs";
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  bool max_num_seqs_given = false;  // set by add()'s callback when the flag was on the command line
  SpecFlags spec;
  // Adds the limits, memory and schedule flags, and the speculative ones
  // (exclusive of each other unless several_spec_methods).
  void add(CLI::App& app, bool max_num_seqs_flag = true, bool several_spec_methods = false);
  EngineOptions options(ModelOptions model) const;
  // The same limits, memory and schedule for the benches' engine (`bench
  // --concurrency`, `bench serve`).
  void apply(ServingBenchOptions& o) const;
};

}  // namespace tessera::cli
