// Tiling: each matmul-family node gets tile sizes for this target, chosen
// from the device's caches, cores and roofs, stored on the node (printed as
// tile{...}) and honored by the kernels; --tile overrides them.
//   weight_block_bytes  weights kept hot while every x-row tile passes over
//                       them: an eighth of the per-core L2, so x tiles and
//                       y stay resident too.
//   chunk_bytes         least weight bytes per parallel work item: 64 KiB
//                       (measured on Zen 4; smaller items lost to pool
//                       overhead on a shared 2-core host). When the cost
//                       model says the whole op takes less at the device's
//                       roofs than a thread-pool round trip per core, one
//                       item: splitting it would cost more than it saves.
//                       (Without measured roofs the rule has nothing to go
//                       on and is skipped.)
// Tiles change which thread computes which outputs, never an output's
// arithmetic, so results are the same bits for any tiling.
#include <algorithm>

#include "graph/cost_model.h"
#include "graph/passes/passes.h"

namespace tessera::graph::passes {

namespace {

constexpr int64_t kKiB = 1024;
constexpr double kPoolRoundTripUs = 2.0;  // waking and joining a worker, per core

bool is_matmul(OpKind op) { return is_matmul_family(op); }

TileParams choose(const Graph& g, const Node& n, const DeviceInfo& d) {
  const int64_t weight_bytes = (int64_t)g.value(n.inputs[1]).desc.bytes();
  const int64_t cores = std::max<int64_t>(1, d.compute_units);
  const int64_t l2 = d.l2_bytes ? (int64_t)d.l2_bytes : 1024 * kKiB;
  TileParams t;
  t.weight_block_bytes = std::clamp<int64_t>(l2 / 8, 32 * kKiB, 512 * kKiB);
  t.chunk_bytes = 64 * kKiB;
  // Decode (one row) is the case that runs every step.
  const double us = roofline_us(estimate_cost(g, n, 1), d);
  if (us > 0 && us < kPoolRoundTripUs * (double)cores) t.chunk_bytes = std::max<int64_t>(weight_bytes, 4 * kKiB);
  return t;
}

}  // namespace

Status tile(Graph& g, const PassContext& ctx) {
  for (Node& n : g.nodes) {
    if (!is_matmul(n.op)) continue;
    if (ctx.device) n.tile = choose(g, n, *ctx.device);
    for (const TileOverride& o : ctx.tile_overrides) {
      if (o.op != "*" && o.op != name(n.op)) continue;
      (o.field == "chunk_bytes" ? n.tile.chunk_bytes : n.tile.weight_block_bytes) = o.bytes;
    }
  }
  return Status::ok();
}

}  // namespace tessera::graph::passes
