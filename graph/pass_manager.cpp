#include "graph/pass_manager.h"

#include <algorithm>
#include <chrono>

#include "graph/passes/passes.h"
#include "graph/printer.h"
#include "graph/verifier.h"

namespace tessera::graph {

const std::vector<PassInfo>& registered_passes() {
  static const std::vector<PassInfo> all = {
      {"shape_inference", "recompute every value's shape and dtype from its op's shape rule", "all", passes::shape_inference},
      {"tensor_parallel",
       "this rank's part of a model split over --tensor-parallel ranks: column-parallel Q/K/V and gate/up, row-parallel "
       "output and down projections with an all_reduce after each, KV heads divided, a vocabulary-parallel classifier with an "
       "all_gather (nothing without --tensor-parallel)",
       "all", passes::tensor_parallel},
      {"pipeline_parallel",
       "this rank's stage of a model split over --pipeline-parallel ranks: its range of the layers (the first stage the "
       "embedding, the last the classifier), the residual stream received from the stage before and sent to the next, the "
       "logits sent to rank 0 (nothing without --pipeline-parallel)",
       "all", passes::pipeline_parallel},
      {"dce", "remove nodes whose values nothing reads (KV writes are kept)", "all", passes::dead_code_elimination},
      {"fuse_qkv", "Q, K and V projections of one input into one matmul over a packed weight", "cpu, vulkan",
       passes::fuse_qkv},
      {"fuse_gate_up", "FFN gate and up projections into one matmul over a packed weight, SiLU gating fused behind it",
       "cpu, vulkan", passes::fuse_gate_up},
      {"fuse_matmul_residual", "matmul followed by a residual add into one matmul with an add epilogue", "cpu",
       passes::fuse_matmul_residual},
      {"fuse_rope_kv_append", "RoPE of Q and K and the KV append into one attention prologue", "cpu",
       passes::fuse_rope_kv_append},
      {"fuse_residual_norm", "a residual add (or matmul_add) and the RMSNorm of its sum into one node with both values", "cpu",
       passes::fuse_residual_norm},
      {"place", "each node on the target device or, where the target lacks its kernel, on the CPU, or where --place says (any device id); copies where values cross devices", "all",
       passes::place},
      {"fold_constants", "RoPE cos/sin of every position into one constant table made at load (needs the context's max positions)",
       "cpu", passes::fold_constants},
      {"fuse_matmul_epilogue",
       "a matmul and the elementwise chain on its product (bias, activation, add/mul with a tensor) into one matmul "
       "whose epilogue runs on each output block",
       "cpu", passes::fuse_matmul_epilogue},
      {"fuse_elementwise", "a chain of single-use elementwise ops into one elementwise node running a small program", "cpu",
       passes::fuse_elementwise},
      {"repack_weights", "each matmul weight in the block order the target's kernels read fastest, made once at load",
       "cpu", passes::repack_weights},
      {"tile", "tile sizes for each matmul from the device's caches, cores, workgroup limits and roofs (cost model); --tile overrides", "cpu, vulkan",
       passes::tile},
  };
  return all;
}

const PassInfo* find_pass(const std::string& name) {
  for (const PassInfo& p : registered_passes())
    if (name == p.name) return &p;
  return nullptr;
}

std::vector<std::string> default_pipeline(const std::string& target) {
  // Every target runs the same order; a fusion whose kernel a target lacks
  // leaves its pattern unfused there (it asks the target's kernel table).
  (void)target;
  return {"shape_inference", "tensor_parallel", "pipeline_parallel", "dce", "fuse_qkv", "fuse_gate_up", "fuse_matmul_residual", "fuse_rope_kv_append", "fuse_residual_norm",
          "fold_constants", "fuse_matmul_epilogue", "fuse_elementwise", "dce", "repack_weights", "place", "tile"};
}

Expected<std::vector<const PassInfo*>> parse_pipeline(const std::string& spec, const std::string& target,
                                                      const std::string& flag) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    start = end + 1;
    if (item == "default") {
      for (auto& n : default_pipeline(target)) names.push_back(n);
    } else if (item == "none") {
      names.clear();
    } else if (!item.empty() && item[0] == '-') {
      const std::string n = item.substr(1);
      if (!find_pass(n)) return invalid_argument(flag + ": '" + n + "' is not a pass; run `tessera ir --list-passes`");
      std::erase(names, n);
    } else {
      if (!find_pass(item)) {
        std::string known;
        for (const PassInfo& p : registered_passes()) known += std::string(known.empty() ? "" : ", ") + p.name;
        return invalid_argument(flag + ": '" + item + "' is not a pass; expected default, none, -NAME or one of: " + known);
      }
      names.push_back(item);
    }
  }
  std::vector<const PassInfo*> out;
  for (const auto& n : names) out.push_back(find_pass(n));
  return out;
}

Status run_pipeline(Graph& g, const std::vector<const PassInfo*>& passes, const PassContext& ctx,
                    const PipelineOptions& opts, std::vector<PassTiming>* timings) {
  for (const std::string& n : opts.print_after)
    if (!find_pass(n)) return invalid_argument("--print-after: '" + n + "' is not a pass");
  if (opts.verify_each) TS_TRY(verify(g).with_context("before the first pass"));
  for (const PassInfo* p : passes) {
    const auto t0 = std::chrono::steady_clock::now();
    TS_TRY(p->run(g, ctx).with_context(std::string("pass ") + p->name));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (timings) timings->push_back({p->name, ms, g.nodes.size()});
    if (opts.verify_each) TS_TRY(verify(g).with_context(std::string("after pass ") + p->name));
    const bool want = opts.print_after_all ||
                      std::find(opts.print_after.begin(), opts.print_after.end(), p->name) != opts.print_after.end();
    if (want && opts.print) opts.print("// after " + std::string(p->name) + "\n" + print(g));
  }
  return Status::ok();
}

Expected<std::optional<WeightLayout>> parse_weight_layout_override(const std::string& spec, const std::string& flag) {
  if (spec.empty() || spec == "auto") return std::optional<WeightLayout>{};
  auto l = weight_layout_from_name(spec);
  if (!l) return invalid_argument(flag + ": '" + spec + "'; expected auto, rows, rows_x4 or rows_x16");
  return std::optional<WeightLayout>{*l};
}

Expected<std::vector<TileOverride>> parse_tile_overrides(const std::string& spec, const std::string& flag) {
  static const char* kOps[] = {"*", "matmul", "matmul_add", "matmul_silu_mul", "matmul_qkv", "matmul_add_rms_norm"};
  std::vector<TileOverride> out;
  if (spec.empty()) return out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    start = end + 1;
    const size_t dot = item.find('.'), eq = item.find('=');
    const std::string head = flag + ": '" + item + "'";
    if (dot == std::string::npos || eq == std::string::npos || eq < dot)
      return invalid_argument(head + "; expected OP.FIELD=VALUE, e.g. matmul.chunk_bytes=32768");
    TileOverride t{item.substr(0, dot), item.substr(dot + 1, eq - dot - 1), 0};
    if (std::find_if(std::begin(kOps), std::end(kOps), [&](const char* o) { return t.op == o; }) == std::end(kOps))
      return invalid_argument(head + ": OP '" + t.op + "' is not a matmul; expected *, matmul, matmul_add, matmul_silu_mul, matmul_qkv or matmul_add_rms_norm");
    const TileField* f = find_tile_field(t.field);
    if (!f) return invalid_argument(head + ": no tile field '" + t.field + "'; expected one of " + tile_field_names());
    const std::string num = item.substr(eq + 1);
    size_t used = 0;
    bool parsed = !num.empty();
    try {
      if (parsed) t.value = std::stoll(num, &used);
    } catch (...) {
      parsed = false;
    }
    if (!parsed || used != num.size() || !tile_value_problem(*f, t.value).empty())
      return invalid_argument(head + ": " + t.field + " must be " + tile_field_range(*f) + ", got '" + num + "'");
    out.push_back(t);
  }
  return out;
}

std::optional<PlacementDevice> PassContext::find_device(const DeviceId& id) const {
  if (id == target) return PlacementDevice{target, kernels, device};
  if (id == fallback_target) return PlacementDevice{fallback_target, fallback_kernels, fallback_device};
  for (const PlacementDevice& d : other_devices)
    if (d.id == id) return d;
  return std::nullopt;
}

std::string PassContext::known_devices() const {
  std::string out = target.to_string();
  if (fallback_target != target) out += ", " + fallback_target.to_string();
  for (const PlacementDevice& d : other_devices)
    if (d.id != target && d.id != fallback_target) out += ", " + d.id.to_string();
  return out;
}

Status run_passes(Graph& g, const std::string& spec, const PassContext& ctx) {
  TS_ASSIGN_OR_RETURN(auto pipeline, parse_pipeline(spec, ctx.target.backend));
  PipelineOptions o;
  o.verify_each = true;
  return run_pipeline(g, pipeline, ctx, o);
}

}  // namespace tessera::graph
