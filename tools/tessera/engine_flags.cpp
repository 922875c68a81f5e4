#include "tools/tessera/engine_flags.h"

#include <CLI/CLI.hpp>

namespace tessera::cli {

void add_kv_type_flag(CLI::App& s, std::string& kv_type) {
  s.add_option("--kv-type", kv_type,
               "KV cache element type: f32, f16, bf16, q8_0 or fp8_e4m3 (8-bit types: blocks of 32 with an f16 scale, "
               "head_dim a multiple of 32; default auto: f32 for a model whose matrices are all f32, else f16)")
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16", "q8_0", "fp8_e4m3"}));
}

bool& parallel_requested() {
  static bool asked = false;
  return asked;
}

void ModelFlags::add(CLI::App& s) {
  s.add_option("--tensor-parallel", tensor_parallel,
               "split every layer over N ranks started by `mpirun -np N tessera ...`; rank 0 runs the command (docs/parallelism.md)")
      ->check(CLI::Range(1, 1024))
      ->each([](const std::string& v) { parallel_requested() |= std::stoi(v) > 1; });
  s.add_option("--pipeline-parallel", pipeline_parallel,
               "split the layers into N stages on N ranks started by `mpirun -np N tessera ...`; rank 0 runs the command (docs/parallelism.md)")
      ->check(CLI::Range(1, 1024))
      ->each([](const std::string& v) { parallel_requested() |= std::stoi(v) > 1; });
  s.add_option("--backend", backend, "backend: cpu, or a plugin's name");
  s.add_option("--device", device, "device index within the backend");
  s.add_option("--ctx", ctx, "context length to allocate (default: the model's, at most 4096)");
  s.add_option("--passes", passes, "graph passes: default, none, default,-NAME, ... (tessera ir --list-passes)");
  s.add_option("--tile", tile, "tile sizes replacing the tiling pass's: OP.FIELD=VALUE,... (docs/ir.md)");
  s.add_option("--place", place,
               "pin nodes to a device: PATTERN=DEVICE,... PATTERN an op name or label glob, DEVICE an id like cpu or vulkan:1 (docs/ir.md)");
  s.add_option("--weight-layout", weight_layout, "matmul weights' block order: auto (the target's preference), rows, rows_x4 or rows_x16 (docs/ir.md)");
  add_kv_type_flag(s, kv_type);
  s.add_flag("--strict", strict, "refuse to run nodes the backend lacks on the CPU instead");
  s.add_flag("--batch-invariant", batch_invariant,
             "kernels whose results for a sequence do not depend on what shares its steps (docs/backends.md, \"Batch invariance\")");
}

ModelOptions ModelFlags::options(const std::string& model, const std::string& tokenizer) const {
  ModelOptions mo;
  mo.path = model;
  mo.tokenizer_path = tokenizer;
  mo.backend = backend;
  mo.device = device;
  mo.max_context = ctx;
  mo.strict = strict;
  mo.passes = passes;
  mo.tile = tile;
  mo.place = place;
  mo.weight_layout = weight_layout;
  mo.kv_type = kv_type;
  mo.batch_invariant = batch_invariant;
  mo.tensor_parallel = tensor_parallel;
  mo.pipeline_parallel = pipeline_parallel;
  return mo;
}

void EngineFlags::add(CLI::App& s, bool max_num_seqs_flag, bool several_spec_methods) {
  spec.add(s, !several_spec_methods);
  if (max_num_seqs_flag)
    s.add_option("--max-num-seqs", max_num_seqs, "sequences one step may carry (default 16)")
        ->check(CLI::Range(1, 1 << 16))
        ->each([this](const std::string&) { max_num_seqs_given = true; });
  s.add_option("--max-num-batched-tokens,--max-prefill", max_num_batched_tokens,
               "tokens one step may carry: decodes plus prompt chunks (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  s.add_option("--max-prefill-chunk", max_prefill_chunk,
               "tokens of one prompt per step, so a long prompt does not stall running streams (default 0: no limit but the step's)")
      ->check(CLI::Range(0, 1 << 20));
  s.add_option("--kv-cache-memory", kv_cache_memory,
               "bytes of K/V pools over every layer (default: a fraction of the device's free memory, docs/serving.md)");
  s.add_flag("--no-prefix-cache", no_prefix_cache, "do not reuse the KV blocks of prompts seen before");
  s.add_option("--pipeline-batches", pipeline_batches,
               "with --pipeline-parallel: independent batches of sequences in flight across the stages, so decode steps overlap "
               "(default 0: one a stage, at most 2; 1: one batch)")
      ->check(CLI::Range(0, 2));
  s.add_option("--schedule", schedule,
               "fcfs (default) or slo: admission and prompt chunks chosen to maximize the requests meeting --slo-ttft-ms and "
               "--slo-tpot-ms (docs/serving.md)")
      ->check(CLI::IsMember({"fcfs", "slo"}));
  s.add_option("--slo-ttft-ms", slo_ttft_ms, "with --schedule slo: the time-to-first-token target")->check(CLI::PositiveNumber);
  s.add_option("--slo-tpot-ms", slo_tpot_ms, "with --schedule slo: the time-per-output-token target")->check(CLI::PositiveNumber);
}

void SpecFlags::add(CLI::App& s, bool exclusive) {
  auto* draft = s.add_option("--draft-model", draft_model,
                             "speculative decoding: a smaller model with the same vocabulary proposes --spec-tokens tokens a step (docs/serving.md)");
  s.add_option("--spec-tokens", spec_tokens, "speculative decoding: proposals per sequence and step, at most (default 4)")
      ->check(CLI::Range(1, 32));
  auto* lookup = s.add_option("--lookup-ngram", lookup_ngram,
                              "prompt-lookup decoding: propose the tokens after the latest earlier match of the text's last N..1 tokens")
                     ->check(CLI::Range(1, 64));
  auto* jac = s.add_option("--jacobi", jacobi, "Jacobi decoding: iterate a window of K guesses to the greedy fixed point (greedy requests only)")
                  ->check(CLI::Range(1, 32));
  if (exclusive) {
    draft->excludes(lookup)->excludes(jac);
    lookup->excludes(jac);
  }
  s.add_flag("--no-adaptive-spec", fixed_k, "speculative decoding: always propose --spec-tokens, whatever the acceptance rate");
}

std::vector<EngineOptions::Speculative> SpecFlags::methods() const {
  std::vector<EngineOptions::Speculative> out;
  EngineOptions::Speculative base;
  base.tokens = spec_tokens;
  base.adaptive = !fixed_k;
  if (!draft_model.empty()) {
    out.push_back(base);
    out.back().method = "draft";
    out.back().draft_model = draft_model;
  }
  if (lookup_ngram > 0) {
    out.push_back(base);
    out.back().method = "ngram";
    out.back().ngram = lookup_ngram;
  }
  if (jacobi > 0) {
    out.push_back(base);
    out.back().method = "jacobi";
    out.back().tokens = jacobi;
  }
  return out;
}

EngineOptions::Speculative SpecFlags::first() const {
  auto all = methods();
  return all.empty() ? EngineOptions::Speculative{} : all[0];
}

EngineOptions EngineFlags::options(ModelOptions model) const {
  EngineOptions eo;
  eo.model = std::move(model);
  eo.max_num_seqs = max_num_seqs;
  eo.max_num_batched_tokens = max_num_batched_tokens;
  eo.max_prefill_chunk = max_prefill_chunk;
  eo.kv_cache_memory = kv_cache_memory;
  eo.prefix_caching = !no_prefix_cache;
  eo.pipeline_batches = pipeline_batches;
  eo.schedule = schedule;
  eo.slo_ttft_ms = slo_ttft_ms;
  eo.slo_tpot_ms = slo_tpot_ms;
  eo.speculative = spec.first();
  return eo;
}

void EngineFlags::apply(ServingBenchOptions& o) const {
  o.max_num_batched_tokens = max_num_batched_tokens;
  o.max_prefill_chunk = max_prefill_chunk;
  o.kv_cache_memory = kv_cache_memory;
  o.prefix_caching = !no_prefix_cache;
  o.schedule = schedule;
  o.slo_ttft_ms = slo_ttft_ms;
  o.slo_tpot_ms = slo_tpot_ms;
  o.speculative = spec.first();
}

}  // namespace tessera::cli
