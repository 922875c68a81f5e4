// tessera ir: print a model's graph after the passes (or after each one),
// time the passes, or read a printed graph back and verify it.
#include <CLI/CLI.hpp>
#include <cstdio>

#include <tessera/ir.h>

#include "tools/tessera/cli_common.h"
#include "tools/tessera/engine_flags.h"

namespace tessera::cli {

namespace {

struct IrFlags {
  std::string model, passes, tile, place, weight_layout = "auto", kv_type = "auto", print_after, target = "cpu", parse_file;
  bool print_after_all = false, time_passes = false, list_passes = false, strict = false, batch_invariant = false;
  int32_t ctx = 0, block_size = 16, memory_plan_rows = 0, tensor_parallel = 1, pipeline_parallel = 1, rank = 0;
} f;

int ir_main() {
  if (f.list_passes) {
    for (const auto& p : list_passes()) std::printf("%-22s [%s] %s\n", p.name.c_str(), p.backends.c_str(), p.summary.c_str());
    std::string order;
    for (const auto& n : default_pass_order(f.target)) order += (order.empty() ? "" : ",") + n;
    std::printf("default order for %s: %s\n", f.target.c_str(), order.c_str());
    return 0;
  }
  IrOptions o;
  o.model_path = f.model;
  o.parse_path = f.parse_file;
  o.passes = f.passes;
  o.target = f.target;
  o.tile = f.tile;
  o.place = f.place;
  o.weight_layout = f.weight_layout;
  o.kv_type = f.kv_type;
  o.strict = f.strict;
  o.batch_invariant = f.batch_invariant;
  o.ctx = f.ctx;
  o.block_size = f.block_size;
  o.tensor_parallel = f.tensor_parallel;
  o.pipeline_parallel = f.pipeline_parallel;
  o.rank = f.rank;
  o.print_after_all = f.print_after_all;
  o.print_after = f.print_after;
  o.memory_plan_rows = f.memory_plan_rows;
  o.print = [](const std::string& text) { std::fputs(text.c_str(), stdout); };
  o.note = [](const std::string& line) { std::fprintf(stderr, "tessera: %s\n", line.c_str()); };
  auto timings = run_ir(o);
  if (!timings) return fail(timings.status());
  if (f.time_passes) {
    double total = 0;
    for (const auto& t : *timings) {
      std::fprintf(stderr, "time-passes: %-22s %8.3f ms  %5zu nodes after\n", t.pass.c_str(), t.ms, t.nodes_after);
      total += t.ms;
    }
    std::fprintf(stderr, "time-passes: %-22s %8.3f ms\n", "total", total);
  }
  return 0;
}

}  // namespace

Subcommand add_ir(CLI::App& app) {
  CLI::App* s = app.add_subcommand("ir", "print a model's graph IR after the passes, or parse and verify a printed one");
  s->add_option("-m,--model", f.model, "model: GGUF, llama2.c .bin, or a Hugging Face folder");
  s->add_option("--passes", f.passes, "pass list: default, none, default,-NAME, or NAME,NAME,... (see --list-passes); default: default with -m, none with --parse");
  s->add_flag("--print-after-all", f.print_after_all, "print the graph after every pass");
  s->add_option("--print-after", f.print_after, "print the graph after the pass NAME");
  s->add_flag("--time-passes", f.time_passes, "report each pass's time on stderr");
  s->add_option("--target", f.target, "backend whose kernel table the passes ask (cpu, or a plugin's name)");
  s->add_option("--tile", f.tile, "tile sizes replacing the tiling pass's: OP.FIELD=VALUE,... e.g. matmul.chunk_bytes=32768,*.tile_m=32");
  s->add_option("--place", f.place, "pin nodes to a device: PATTERN=DEVICE,... PATTERN an op name or label glob, e.g. paged_attention=cpu");
  s->add_flag("--strict", f.strict, "placement refuses a node the target cannot run instead of putting it on the CPU");
  s->add_flag("--batch-invariant", f.batch_invariant, "the tiling pass marks matmul and attention nodes tile{batch_invariant=1} (docs/backends.md)");
  s->add_option("--weight-layout", f.weight_layout, "matmul weights' block order: auto (the target's preference), rows, rows_x4 or rows_x16 (docs/ir.md)");
  add_kv_type_flag(*s, f.kv_type);
  s->add_option("--memory-plan", f.memory_plan_rows, "after the graph, print its arena plan at this many rows (T = R)");
  s->add_option("--ctx", f.ctx, "context length the KV pools and folded RoPE tables are sized for (default: the model's, at most 4096)");
  s->add_option("--block-size", f.block_size, "KV block size in tokens");
  s->add_option("--tensor-parallel", f.tensor_parallel, "print rank --rank's part of the model split over N ranks (docs/parallelism.md)")
      ->check(CLI::Range(1, 1024));
  s->add_option("--pipeline-parallel", f.pipeline_parallel, "print rank --rank's stage of the model split into N stages")
      ->check(CLI::Range(1, 1024));
  s->add_option("--rank", f.rank, "the rank whose part --tensor-parallel or --pipeline-parallel prints (default 0)");
  s->add_option("--parse", f.parse_file, "read a printed graph from FILE, verify it, run --passes on it and print it");
  s->add_flag("--list-passes", f.list_passes, "list the passes and the default order");
  return {s, ir_main};
}

}  // namespace tessera::cli
