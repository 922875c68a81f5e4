// tessera ir: print a model's graph after the passes (or after each one),
// time the passes, or read a printed graph back and verify it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/models/load_model.h"
#include "engine/runtime/llama_graph.h"
#include "engine/runtime/model_runner.h"
#include "graph/memory_plan.h"
#include "graph/parser.h"
#include "graph/pass_manager.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct IrFlags {
  std::string model, passes, tile, place, weight_layout = "auto", print_after, target = "cpu", parse_file;
  bool print_after_all = false, time_passes = false, list_passes = false, strict = false;
  int32_t ctx = 0, block_size = 16, memory_plan_rows = 0;
} f;

// Runs the pipeline on g with the target's kernel table, printing and timing as asked.
// max_positions: the context the RoPE tables are folded for (0: fold_constants skips).
int run_and_print(graph::Graph& g, const std::string& spec, int32_t max_positions) {
  auto pipeline = graph::parse_pipeline(spec, f.target);
  if (!pipeline) return fail(pipeline.status());
  // The target's kernel table decides which fusions apply.
  auto device = open_device(f.target, 0);
  if (!device) return fail(device.status().with_context("--target"));
  graph::PassContext ctx{.target = f.target, .kernels = &(*device)->kernels(), .device = &(*device)->info()};
  auto overrides = graph::parse_tile_overrides(f.tile);
  if (!overrides) return fail(overrides.status());
  ctx.tile_overrides = *overrides;
  // Placement's fallback is the CPU: its kernel table says what it can take.
  std::unique_ptr<Device> cpu;
  if (f.target != "cpu") {
    auto c = open_device("cpu", 0);
    if (!c) return fail(c.status());
    cpu = std::move(*c);
  }
  ctx.fallback_kernels = cpu ? &cpu->kernels() : ctx.kernels;
  ctx.fallback_device = cpu ? &cpu->info() : ctx.device;
  auto place = graph::parse_placement_overrides(f.place);
  if (!place) return fail(place.status());
  ctx.placement_overrides = *place;
  ctx.strict = f.strict;
  ctx.max_positions = max_positions;
  auto layout = graph::parse_weight_layout_override(f.weight_layout);
  if (!layout) return fail(layout.status());
  ctx.weight_layout_override = *layout;
  graph::PipelineOptions po;
  po.verify_each = true;
  po.print_after_all = f.print_after_all;
  if (!f.print_after.empty()) po.print_after = {f.print_after};
  po.print = [](const std::string& text) { std::fputs(text.c_str(), stdout); };
  std::vector<graph::PassTiming> timings;
  if (Status s = graph::run_pipeline(g, *pipeline, ctx, po, &timings); !s.is_ok()) return fail(s);
  if (!f.print_after_all && f.print_after.empty()) std::fputs(graph::print(g).c_str(), stdout);
  if (f.memory_plan_rows > 0) {
    const graph::MemoryPlan mp = graph::plan_memory(g, graph::value_bytes_at(g, f.memory_plan_rows));
    if (Status s = graph::verify_memory_plan(g, mp); !s.is_ok()) return fail(s);
    std::printf("// at T = R = %d\n%s", f.memory_plan_rows, graph::describe(g, mp).c_str());
  }
  if (f.time_passes) {
    double total = 0;
    for (const auto& t : timings) {
      std::fprintf(stderr, "time-passes: %-22s %8.3f ms  %5zu nodes after\n", t.pass.c_str(), t.ms, t.nodes_after);
      total += t.ms;
    }
    std::fprintf(stderr, "time-passes: %-22s %8.3f ms\n", "total", total);
  }
  return 0;
}

int parse_main() {
  std::ifstream in(f.parse_file, std::ios::binary);
  if (!in) return fail(not_found("--parse: cannot open '" + f.parse_file + "'"));
  std::ostringstream ss;
  ss << in.rdbuf();
  auto g = graph::parse(ss.str(), f.parse_file);
  if (!g) return fail(g.status());
  if (Status s = graph::verify(*g); !s.is_ok()) return fail(s.with_context(f.parse_file));
  std::fprintf(stderr, "tessera: %s: %zu nodes, %zu values; verified\n", f.parse_file.c_str(), g->nodes.size(), g->values.size());
  // A parsed graph is printed back as it is unless passes are asked for.
  // --ctx sizes the tables fold_constants makes when asked for here; a parsed graph's own constants carry theirs.
  return run_and_print(*g, f.passes.empty() ? "none" : f.passes, f.ctx);
}

int ir_main() {
  if (f.list_passes) {
    for (const auto& p : graph::registered_passes()) std::printf("%-22s [%s] %s\n", p.name, p.backends, p.summary);
    std::string order;
    for (const auto& n : graph::default_pipeline(f.target)) order += (order.empty() ? "" : ",") + n;
    std::printf("default order for %s: %s\n", f.target.c_str(), order.c_str());
    return 0;
  }
  if (!f.parse_file.empty()) return parse_main();
  if (f.model.empty()) return fail(invalid_argument("ir: give -m MODEL to print, or --parse FILE to read back"));
  auto w = load_model(f.model);
  if (!w) return fail(w.status());
  const LlamaConfig& c = w->config;
  const int32_t ctx = f.ctx ? f.ctx : std::min(c.context_length, RunnerOptions::kDefaultContextCap);
  if (ctx < 1 || ctx > c.context_length || f.block_size < 1)
    return fail(invalid_argument("--ctx: expected 1 to " + std::to_string(c.context_length) + " and --block-size >= 1"));
  auto g = build_llama_graph(*w, KvLayout{(ctx + f.block_size - 1) / f.block_size, f.block_size});
  if (!g) return fail(g.status());
  return run_and_print(*g, f.passes.empty() ? "default" : f.passes, ctx);
}

}  // namespace

Subcommand add_ir(CLI::App& app) {
  CLI::App* s = app.add_subcommand("ir", "print a model's graph IR after the passes, or parse and verify a printed one");
  s->add_option("-m,--model", f.model, "model file (GGUF or llama2.c .bin)");
  s->add_option("--passes", f.passes, "pass list: default, none, default,-NAME, or NAME,NAME,... (see --list-passes); default: default with -m, none with --parse");
  s->add_flag("--print-after-all", f.print_after_all, "print the graph after every pass");
  s->add_option("--print-after", f.print_after, "print the graph after the pass NAME");
  s->add_flag("--time-passes", f.time_passes, "report each pass's time on stderr");
  s->add_option("--target", f.target, "backend whose kernel table the passes ask (cpu, or a plugin's name)");
  s->add_option("--tile", f.tile, "tile sizes replacing the tiling pass's: OP.FIELD=VALUE,... e.g. matmul.chunk_bytes=32768,*.tile_m=32");
  s->add_option("--place", f.place, "pin nodes to a device: PATTERN=DEVICE,... PATTERN an op name or label glob, e.g. paged_attention=cpu");
  s->add_flag("--strict", f.strict, "placement refuses a node the target cannot run instead of putting it on the CPU");
  s->add_option("--weight-layout", f.weight_layout, "matmul weights' block order: auto (the target's preference), rows or rows_x4 (docs/ir.md)");
  s->add_option("--memory-plan", f.memory_plan_rows, "after the graph, print its arena plan at this many rows (T = R)");
  s->add_option("--ctx", f.ctx, "context length the KV pools and folded RoPE tables are sized for (default: the model's, at most 4096)");
  s->add_option("--block-size", f.block_size, "KV block size in tokens");
  s->add_option("--parse", f.parse_file, "read a printed graph from FILE, verify it, run --passes on it and print it");
  s->add_flag("--list-passes", f.list_passes, "list the passes and the default order");
  return {s, ir_main};
}

}  // namespace tessera::cli
