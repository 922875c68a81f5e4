#pragma once
// Named passes over the graph, an order per target, and what runs between
// them: the verifier (after every pass in debug builds, in the tests and
// when asked), printing (`--print-after-all`, `--print-after NAME`) and
// timing (`--time-passes`). A pipeline is written as a list:
//   "default"                 the target's order (default_pipeline)
//   "none"                    no passes: the graph as the model builder made it
//   "default,-fuse_qkv"       the default order without one pass
//   "shape_inference,dce"     exactly these, in this order
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/hal/device_id.h"
#include "core/hal/device_info.h"
#include "core/hal/kernel_table.h"
#include "core/status.h"
#include "graph/ir.h"

namespace tessera::graph {

// One --tile item: OP.FIELD=VALUE, OP a matmul-family op name or '*',
// FIELD one of core/tile_params.h's (each with its allowed range).
struct TileOverride {
  std::string op;     // "*" for every op
  std::string field;  // a TileField name: weight_block_bytes, chunk_bytes, workgroup_size, ...
  int64_t value = 0;
};
// One --place item: PATTERN=DEVICE. PATTERN is an op name or a label, '*'
// matching any run of characters ("paged_attention", "blk.3.*"); DEVICE a
// device id ("vulkan:1"; a bare "cpu" is cpu:0).
struct PlacementOverride {
  std::string pattern;
  DeviceId device;
};

// A device placement may put nodes on, with what it can run and its caps.
struct PlacementDevice {
  DeviceId id;
  const KernelTable* kernels = nullptr;  // null: taken to run everything
  const DeviceInfo* info = nullptr;      // null: tiling leaves its nodes' kernels at their defaults
};

struct PassContext {
  DeviceId target{"cpu", 0};
  // The target's kernels; fusions apply only where it has the fused kernel.
  // Null: every fused kernel is taken as present (printing, tests).
  const KernelTable* kernels = nullptr;
  // The target's caps and roofs, for tiling; null: the tiling pass leaves kernels at their defaults.
  const DeviceInfo* device = nullptr;
  // --tile: sizes that replace the tiling pass's choice.
  std::vector<TileOverride> tile_overrides;
  // Placement: where a node the target cannot run goes instead, and that
  // device's kernels (null: taken to run everything, as the CPU does).
  DeviceId fallback_target{"cpu", 0};
  const KernelTable* fallback_kernels = nullptr;
  const DeviceInfo* fallback_device = nullptr;  // for tiling the nodes placed there
  std::vector<PlacementOverride> placement_overrides;  // --place
  // Further devices --place may name (a second device of the target's
  // backend, ...): the caller opens each and lists it here; a --place device
  // that is none of target, fallback or these is an error.
  std::vector<PlacementDevice> other_devices;
  bool strict = false;  // --strict: a node the target cannot run is an error, not a fallback
  // Positions a step may reach (the runner's context): the rows of the RoPE
  // tables fold_constants makes. 0: unknown, and fold_constants does nothing.
  int32_t max_positions = 0;
  // --weight-layout: the layout repack_weights gives every matmul weight whose
  // kernel reads it, in place of the target's preference; none: the preference.
  std::optional<WeightLayout> weight_layout_override;
  // --batch-invariant: the tiling pass marks every matmul-family and
  // paged_attention node tile{batch_invariant=1} (docs/backends.md, "Batch invariance").
  bool batch_invariant = false;
  // Tensor parallelism (graph/passes/tensor_parallel): this rank's part of
  // a model split over tp_size ranks; 1: the whole model.
  int32_t tp_rank = 0;
  int32_t tp_size = 1;
  // Pipeline parallelism (graph/passes/pipeline_parallel): this rank's stage
  // of pp_size, a range of the layers; 1: every layer.
  int32_t pp_rank = 0;
  int32_t pp_size = 1;

  // The target, the fallback or one of other_devices, by id; null for a device none of them is.
  std::optional<PlacementDevice> find_device(const DeviceId& id) const;
  // "cpu:0, vulkan:0, vulkan:1": the devices placement may use, for error messages.
  std::string known_devices() const;
};

// Why placement put n off the target, in a line naming it ("" when it is on the target or a copy).
std::string why_placed(const Graph& g, const Node& n, const PassContext& ctx);

Expected<std::vector<PlacementOverride>> parse_placement_overrides(const std::string& spec, const std::string& flag = "--place");

// "matmul.chunk_bytes=32768,*.tile_m=32"; an error names the flag, the item and the allowed values.
Expected<std::vector<TileOverride>> parse_tile_overrides(const std::string& spec, const std::string& flag = "--tile");
// "auto" or empty: none (the target's preference); "rows", "rows_x4" or "rows_x16".
Expected<std::optional<WeightLayout>> parse_weight_layout_override(const std::string& spec,
                                                                   const std::string& flag = "--weight-layout");

struct PassInfo {
  const char* name;
  const char* summary;
  const char* backends;  // which backends the pass helps, for docs and `tessera ir --list-passes`
  Status (*run)(Graph&, const PassContext&);
};

const std::vector<PassInfo>& registered_passes();
const PassInfo* find_pass(const std::string& name);
std::vector<std::string> default_pipeline(const std::string& target);  // target: a backend name

// The passes `spec` names, in order; an error names the unknown pass and lists the known.
Expected<std::vector<const PassInfo*>> parse_pipeline(const std::string& spec, const std::string& target,
                                                      const std::string& flag = "--passes");

struct PassTiming {
  std::string pass;
  double ms = 0;
  size_t nodes_after = 0;
};

struct PipelineOptions {
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;
#endif
  bool print_after_all = false;
  std::vector<std::string> print_after;  // pass names
  // Receives each printed graph, headed "// after NAME".
  std::function<void(const std::string&)> print;
};

Status run_pipeline(Graph& g, const std::vector<const PassInfo*>& passes, const PassContext& ctx,
                    const PipelineOptions& opts = {}, std::vector<PassTiming>* timings = nullptr);

// Convenience: parse `spec` and run it with the verifier on.
Status run_passes(Graph& g, const std::string& spec, const PassContext& ctx);

}  // namespace tessera::graph
