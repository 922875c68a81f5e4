#pragma once
// The graph IR, for inspecting what the library builds (`tessera ir`). It is
// installed with the public API, but it shows internals: the printed text and
// the pass names follow the library's version (docs/ir.md), not a stable ABI.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

struct PassDescription {
  std::string name;
  std::string backends;  // which targets it applies to, e.g. "all" or "cpu"
  std::string summary;
};
TESSERA_API std::vector<PassDescription> list_passes();
// The passes "default" stands for on `target`, in order.
TESSERA_API std::vector<std::string> default_pass_order(const std::string& target);

struct IrOptions {
  std::string model_path;  // build this model's graph, or
  std::string parse_path;  // read a printed graph back and verify it
  std::string passes;      // empty: "default" for a model, "none" for a parsed graph
  std::string target = "cpu";  // backend whose kernel table the passes ask
  std::string tile;            // tile overrides (docs/ir.md)
  std::string place;           // nodes pinned to a device (docs/ir.md)
  std::string weight_layout = "auto";
  std::string kv_type = "auto";  // the KV pools' element type (--kv-type): f32, f16, bf16, q8_0, fp8_e4m3 or auto
  bool strict = false;         // placement refuses what the target cannot run
  bool batch_invariant = false;  // the tiling pass marks nodes tile{batch_invariant=1} (docs/backends.md)
  int32_t ctx = 0;             // context the KV pools and RoPE tables are sized for; 0: the model's, at most 4096
  int32_t block_size = 16;     // KV block size in tokens
  // The part of a split model rank `rank` runs (docs/parallelism.md): the
  // tensor_parallel and pipeline_parallel passes with these; 1: the whole model.
  int32_t tensor_parallel = 1, pipeline_parallel = 1, rank = 0;
  bool print_after_all = false;
  std::string print_after;     // print the graph after this pass only
  int32_t memory_plan_rows = 0;  // > 0: also print the arena plan at T = R = this
  std::function<void(const std::string&)> print;  // the printed graph(s), as they are made
  std::function<void(const std::string&)> note;   // progress lines ("FILE: N nodes, M values; verified")
};

struct IrPassTiming {
  std::string pass;
  double ms = 0;
  size_t nodes_after = 0;
};

// Builds (or parses) the graph, runs the passes with verification after each,
// and prints through options.print; returns each pass's time.
TESSERA_API Expected<std::vector<IrPassTiming>> run_ir(const IrOptions& options);

}  // namespace tessera
