// tessera run: generate text (or ids) from a prompt, as llama2.c's run does.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <random>

#include <tessera/tessera.h>
#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct RunFlags {
  std::string model, tokenizer, prompt, prompt_ids, backend = "cpu", passes = "default", tile, place, weight_layout = "auto";
  int32_t steps = 256;
  float temperature = 1.0f, top_p = 0.9f;
  int32_t top_k = 0;
  int64_t seed = -1;
  int device = 0;
  int32_t ctx = 0;
  int32_t max_prefill = 256;
  uint64_t kv_cache_bytes = 0;
  bool print_ids = false;
  bool strict = false;
  bool batch_invariant = false;
} f;

int run_main() {
  SamplerParams sp;
  sp.temperature = f.temperature;
  sp.top_p = f.top_p;
  sp.top_k = f.top_k;
  sp.seed = f.seed >= 0 ? (uint64_t)f.seed : std::random_device{}();
  if (Status s = validate(sp); !s.is_ok()) return fail(s);
  ModelOptions mo;
  mo.path = f.model;
  mo.tokenizer_path = f.tokenizer;
  mo.backend = f.backend;
  mo.device = f.device;
  mo.max_context = f.ctx;
  mo.max_prefill_tokens = f.max_prefill;
  mo.kv_cache_bytes = f.kv_cache_bytes;
  mo.strict = f.strict;
  mo.passes = f.passes;
  mo.tile = f.tile;
  mo.place = f.place;
  mo.weight_layout = f.weight_layout;
  mo.batch_invariant = f.batch_invariant;
  auto model = Model::open(mo);
  if (!model) return fail(model.status());
  Model& m = **model;
  for (const auto& note : m.placement_notes()) std::fprintf(stderr, "tessera: %s\n", note.c_str());

  std::vector<int32_t> prompt;
  if (!f.prompt_ids.empty()) {
    auto ids = parse_id_list("--prompt-ids", f.prompt_ids);
    if (!ids) return fail(ids.status());
    prompt = *ids;
  } else {
    auto ids = m.encode(f.prompt);
    if (!ids) return fail(ids.status().with_context("-p"));
    prompt = *ids;
  }
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= m.config().vocab_size)
      return fail(out_of_range("--prompt-ids: token id " + std::to_string(prompt[i]) + " (element " + std::to_string(i) +
                               ") is outside the vocabulary [0, " + std::to_string(m.config().vocab_size) + ")"));
  const int32_t ctx = m.max_context();
  if ((int64_t)prompt.size() > ctx)
    return fail(out_of_range("prompt: " + std::to_string(prompt.size()) + " tokens exceed the context length " + std::to_string(ctx)));
  const bool want_text = !f.print_ids;
  if (want_text && !m.has_tokenizer())
    return fail(invalid_argument(f.model + ": has no tokenizer to print text; give one with -z or use --print-ids"));
  int32_t steps = f.steps;
  if (steps <= 0 || steps > ctx) {
    // llama2.c's rule: 0 or too many steps means the whole context.
    std::fprintf(stderr, "tessera: -n %d: using the context length %d\n", steps, ctx);
    steps = ctx;
  }

  auto gen = m.start(sp);
  if (!gen) return fail(gen.status());

  if (want_text) {
    // The prompt's pieces first, as run.c prints them.
    std::vector<int32_t> shown;
    for (size_t i = 1; i < prompt.size() && (int32_t)i <= steps; ++i) {
      auto piece = m.decode({prompt[i - 1], prompt[i]});
      if (piece) std::fputs(piece->c_str(), stdout);
    }
    std::fflush(stdout);
  }
  int32_t prev = prompt.back();
  auto ids = (*gen)->generate(prompt, steps, [&](int32_t id) {
    if (want_text) {
      auto piece = m.decode({prev, id});
      if (piece) std::fputs(piece->c_str(), stdout);
      std::fflush(stdout);
    }
    prev = id;
    return true;
  });
  if (!ids) return fail(ids.status());
  if (f.print_ids) {
    std::string line;
    for (size_t i = 0; i < ids->size(); ++i) line += (i ? "," : "") + std::to_string((*ids)[i]);
    std::printf("%s\n", line.c_str());
  } else {
    std::printf("\n");
  }
  const auto& mt = (*gen)->metrics();
  std::fprintf(stderr, "tessera: %lld prompt tokens at %.1f tok/s, %lld generated at %.1f tok/s (TTFT %.2f ms, TPOT %.2f ms) on %s\n",
               (long long)mt.prompt_tokens, mt.prefill_tok_s(), (long long)mt.generated_tokens, mt.decode_tok_s(),
               mt.ttft_ms, mt.tpot_ms(), m.device().name.c_str());
  return 0;
}

}  // namespace

Subcommand add_run(CLI::App& app) {
  CLI::App* s = app.add_subcommand("run", "generate from a prompt");
  s->add_option("-m,--model", f.model, "model file (GGUF or llama2.c .bin)")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "llama2.c tokenizer.bin (default: the model's own)");
  auto* p = s->add_option("-p,--prompt", f.prompt, "prompt text");
  auto* ids = s->add_option("--prompt-ids", f.prompt_ids, "prompt as comma-separated token ids (BOS included)");
  p->excludes(ids);
  ids->excludes(p);
  s->add_option("-n,--steps", f.steps, "forward passes, prompt included (llama2.c's -n; 0 = context length)");
  s->add_option("--temp", f.temperature, "temperature (0 = greedy)");
  s->add_option("--top-p", f.top_p, "nucleus sampling threshold (1 = off)");
  s->add_option("--top-k", f.top_k, "keep the k most likely tokens (0 = off)");
  s->add_option("--seed", f.seed, "random seed");
  s->add_option("--backend", f.backend, "backend: cpu, or a plugin's name");
  s->add_option("--device", f.device, "device index within the backend");
  s->add_option("--ctx", f.ctx, "context length to allocate (default: the model's, at most 4096)");
  s->add_option("--max-prefill", f.max_prefill, "most tokens one step runs (a longer prompt goes in chunks; default 256)")
      ->check(CLI::Range(1, 1 << 20));
  s->add_option("--kv-cache-bytes", f.kv_cache_bytes,
                "bytes of K/V pools over every layer (default: one whole context; less is refused)");
  s->add_option("--passes", f.passes, "graph passes: default, none, default,-NAME, ... (tessera ir --list-passes)");
  s->add_option("--tile", f.tile, "tile sizes replacing the tiling pass's: OP.FIELD=VALUE,... (docs/ir.md)");
  s->add_option("--place", f.place, "pin nodes to a device: PATTERN=DEVICE,... PATTERN an op name or label glob, DEVICE an id like cpu or vulkan:1 (docs/ir.md)");
  s->add_option("--weight-layout", f.weight_layout, "matmul weights' block order: auto (the target's preference), rows or rows_x4 (docs/ir.md)");
  s->add_flag("--strict", f.strict, "refuse to run nodes the backend lacks on the CPU instead");
  s->add_flag("--batch-invariant", f.batch_invariant,
              "a token's logits never depend on the other tokens of its steps (docs/backends.md, \"Batch invariance\")");
  s->add_flag("--print-ids", f.print_ids, "print the whole id sequence on one line instead of text");
  return {s, run_main};
}

}  // namespace tessera::cli
