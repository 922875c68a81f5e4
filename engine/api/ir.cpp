// run_ir: a model's graph (or a printed one read back) through the passes,
// printed and timed, for `tessera ir` and programs that inspect the IR.
#include <fstream>
#include <sstream>

#include "engine/kv/kv_type.h"
#include "engine/models/load_model.h"
#include "engine/runtime/model_graph.h"
#include "engine/runtime/model_runner.h"
#include "graph/memory_plan.h"
#include "graph/parser.h"
#include "graph/pass_manager.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "tessera/ir.h"

namespace tessera {

std::vector<PassDescription> list_passes() {
  std::vector<PassDescription> out;
  for (const auto& p : graph::registered_passes()) out.push_back({p.name, p.backends, p.summary});
  return out;
}

std::vector<std::string> default_pass_order(const std::string& target) { return graph::default_pipeline(target); }

namespace {

void emit(const std::function<void(const std::string&)>& to, const std::string& text) {
  if (to) to(text);
}

// Runs the pipeline on g with the target's kernel table, printing as asked.
// max_positions: the context the RoPE tables are folded for (0: fold_constants skips).
Expected<std::vector<IrPassTiming>> run_and_print(graph::Graph& g, const IrOptions& o, const std::string& spec,
                                                  int32_t max_positions) {
  TS_ASSIGN_OR_RETURN(const DeviceId target, parse_device_id(o.target, "--target"));
  TS_ASSIGN_OR_RETURN(auto pipeline, graph::parse_pipeline(spec, target.backend));
  // The target's kernel table decides which fusions apply.
  auto device = open_device(target.backend, target.index);
  if (!device) return device.status().with_context("--target");
  graph::PassContext ctx;
  TS_ASSIGN_OR_RETURN(ctx.tile_overrides, graph::parse_tile_overrides(o.tile));
  TS_ASSIGN_OR_RETURN(ctx.placement_overrides, graph::parse_placement_overrides(o.place));
  // Placement's fallback is the CPU, and --place may name other devices: their kernel tables say what they take.
  TS_ASSIGN_OR_RETURN(auto others, open_placement_devices(target, **device, ctx));
  ctx.strict = o.strict;
  ctx.max_positions = max_positions;
  ctx.batch_invariant = o.batch_invariant;
  if (o.tensor_parallel > 1 && o.pipeline_parallel > 1) return unsupported("--tensor-parallel with --pipeline-parallel: one kind of split at a time");
  const int32_t ranks = std::max(o.tensor_parallel, o.pipeline_parallel);
  if (o.rank < 0 || o.rank >= ranks)
    return invalid_argument("--rank " + std::to_string(o.rank) + ": the split has ranks 0.." + std::to_string(ranks - 1));
  ctx.tp_size = o.tensor_parallel;
  ctx.pp_size = o.pipeline_parallel;
  ctx.tp_rank = ctx.pp_rank = o.rank;
  TS_ASSIGN_OR_RETURN(ctx.weight_layout_override, graph::parse_weight_layout_override(o.weight_layout));
  graph::PipelineOptions po;
  po.verify_each = true;
  po.print_after_all = o.print_after_all;
  if (!o.print_after.empty()) po.print_after = {o.print_after};
  po.print = [&](const std::string& text) { emit(o.print, text); };
  std::vector<graph::PassTiming> timings;
  TS_TRY(graph::run_pipeline(g, pipeline, ctx, po, &timings));
  if (!o.print_after_all && o.print_after.empty()) emit(o.print, graph::print(g));
  if (o.memory_plan_rows > 0) {
    const graph::MemoryPlan mp = graph::plan_memory(g, graph::value_bytes_at(g, o.memory_plan_rows));
    TS_TRY(graph::verify_memory_plan(g, mp));
    emit(o.print, "// at T = R = " + std::to_string(o.memory_plan_rows) + "\n" + graph::describe(g, mp));
  }
  std::vector<IrPassTiming> out;
  for (const auto& t : timings) out.push_back({t.pass, t.ms, t.nodes_after});
  return out;
}

Expected<std::vector<IrPassTiming>> parse_and_run(const IrOptions& o) {
  std::ifstream in(o.parse_path, std::ios::binary);
  if (!in) return not_found("--parse: cannot open '" + o.parse_path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  TS_ASSIGN_OR_RETURN(graph::Graph g, graph::parse(ss.str(), o.parse_path));
  if (Status s = graph::verify(g); !s.is_ok()) return s.with_context(o.parse_path);
  emit(o.note, o.parse_path + ": " + std::to_string(g.nodes.size()) + " nodes, " + std::to_string(g.values.size()) +
                   " values; verified");
  // A parsed graph is printed back as it is unless passes are asked for.
  // ctx sizes the tables fold_constants makes when asked for here; a parsed graph's own constants carry theirs.
  return run_and_print(g, o, o.passes.empty() ? "none" : o.passes, o.ctx);
}

}  // namespace

Expected<std::vector<IrPassTiming>> run_ir(const IrOptions& o) {
  if (!o.parse_path.empty()) return parse_and_run(o);
  if (o.model_path.empty()) return invalid_argument("ir: give -m MODEL to print, or --parse FILE to read back");
  TS_ASSIGN_OR_RETURN(ModelWeights w, load_model(o.model_path));
  const TransformerConfig& c = w.config;
  const int32_t ctx = o.ctx ? o.ctx : std::min(c.context_length, RunnerOptions::kDefaultContextCap);
  if (ctx < 1 || ctx > c.context_length || o.block_size < 1)
    return invalid_argument("--ctx: expected 1 to " + std::to_string(c.context_length) + " and --block-size >= 1");
  // "auto" follows the target's kernels, as the runner's does.
  TS_ASSIGN_OR_RETURN(const DeviceId target, parse_device_id(o.target, "--target"));
  auto device = open_device(target.backend, target.index);
  if (!device) return device.status().with_context("--target");
  TS_ASSIGN_OR_RETURN(const DType kv_dtype, resolve_kv_type(o.kv_type, w, &(*device)->kernels()));
  TS_ASSIGN_OR_RETURN(graph::Graph g, build_model_graph(w, KvLayout{(ctx + o.block_size - 1) / o.block_size, o.block_size, kv_dtype}));
  return run_and_print(g, o, o.passes.empty() ? "default" : o.passes, ctx);
}

}  // namespace tessera
