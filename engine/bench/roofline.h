#pragma once
// Every op of a model's decode and prefill steps on the machine's roofline
// (`tessera bench --roofline out.svg`, docs/performance.md): the model's
// graph as built (before fusion: the primitives the op bench times), each
// node's shape at one decode token and at the prompt's tokens timed with
// the op bench (engine/bench/op_bench.h), summed per op kind into one point
// (FLOPs / bytes, FLOPs / second), against the roofs measured in the run.
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/status.h"
#include "engine/bench/op_bench.h"
#include "engine/models/model_weights.h"

namespace tessera {

struct RooflinePoint {
  std::string phase;  // "decode" or "prefill"
  std::string op;     // the op kind: "matmul", "attention", ...
  int calls = 0;      // nodes of this kind in one step
  double flops = 0, bytes = 0, time_us = 0;  // per step, all its calls
  ComputeDtype compute = ComputeDtype::f32_fma;
  double gflops() const { return time_us > 0 ? flops / time_us / 1e3 : 0; }
  double gbps() const { return time_us > 0 ? bytes / time_us / 1e3 : 0; }
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

struct Roofline {
  std::string model;
  int32_t prompt_tokens = 0;
  int threads = 0;
  MachineRoofs roofs;
  std::vector<RooflinePoint> points;
  std::vector<std::string> not_timed;  // op kinds of the graph the op bench has no row for
};

// One node of the graph as an op bench shape: tokens rows per step, a KV
// context of ctx positions. Nodes the table lacks give false.
struct NodeShapes {
  std::vector<std::pair<OpShape, int>> shapes;  // distinct shapes, with how many nodes have each
  std::vector<std::string> not_timed;
};
Expected<NodeShapes> model_op_shapes(const ModelWeights& w, int64_t tokens, int32_t ctx);

// FLOPs of one prefill of `tokens` (the op table's counts over the graph).
Expected<double> prefill_flops(const ModelWeights& w, int32_t tokens);

Expected<Roofline> measure_roofline(ParallelFor& pf, const ModelWeights& w, int32_t prompt_tokens, void (*log)(const std::string&));

// A plain SVG (log-log): the read roof's slope, the compute roofs, a labelled point per op kind and phase.
std::string roofline_svg(const Roofline& r);

}  // namespace tessera
