// Tiling: each matmul-family node gets tile sizes for its target, chosen
// from the device's caches, cores, workgroup limits and roofs, stored on the
// node (printed as tile{...}) and honored by the kernels; --tile overrides
// them (validated against the device: a tile the device cannot run is an
// error here, not a crash there).
//
// CPU (kernels/cpu/matmul.cpp):
//   weight_block_bytes  weights kept hot while every x-row tile passes over
//                       them: an eighth of the per-core L2, so x tiles and
//                       y stay resident too.
//   chunk_bytes         least work per parallel item, in weight bytes per
//                       4-row x tile. The cost model estimates the decode
//                       step's time at the device's roofs and splits it into
//                       parallel_items() items: one when the op is shorter
//                       than a pool round trip per core, up to 4 per core for
//                       long ones. Without roofs: 64 KiB (measured on Zen 4).
// Vulkan (kernels/vulkan/matmul_gemv.comp, matmul_gemm.comp):
//   workgroup_size      gemv invocations: four subgroups (32 at least), so
//                       a workgroup hides one subgroup's load latency behind
//                       the others'.
//   rows_per_workgroup  gemv outputs a workgroup computes: one pass of its
//                       subgroups (4 rows each) or more, as long as the op
//                       still gives 4 workgroups per compute unit.
//   tile_m, tile_n      gemm output tile. With roofs: the smallest whose
//                       arithmetic intensity (2·m·n flops per 4·(m+n) bytes
//                       staged) reaches the device's flops per byte; without:
//                       64x64. tile_n halves while the weight rows give fewer
//                       than 2 workgroups per compute unit. Both shrink to
//                       what the shared memory and workgroup limits allow.
// Tiles change which thread or invocation computes which outputs, never an
// output's arithmetic, so results are the same bits for any tiling.
// batch_invariant (--batch-invariant, PassContext::batch_invariant) is the
// exception: it picks the kernels whose rows do not depend on the step
// (docs/backends.md, "Batch invariance"), on matmul-family and
// paged_attention nodes; --tile can still set it per op.
#include <algorithm>

#include "graph/cost_model.h"
#include "graph/passes/passes.h"

namespace tessera::graph::passes {

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kGemmTileK = 16;  // matmul_gemm's BK: the k-step staged in shared memory

bool is_matmul(OpKind op) { return is_matmul_family(op); }

bool is_gpu(const DeviceInfo& d) { return d.backend == "vulkan"; }

TileParams choose_cpu(const Graph& g, const Node& n, const DeviceInfo& d) {
  const int64_t weight_bytes = (int64_t)g.value(n.inputs[1]).desc.bytes();
  const int64_t cores = std::max<int64_t>(1, d.compute_units);
  const int64_t l2 = d.l2_bytes ? (int64_t)d.l2_bytes : 1024 * kKiB;
  TileParams t;
  t.weight_block_bytes = std::clamp<int64_t>(l2 / 8, 32 * kKiB, 512 * kKiB);
  t.chunk_bytes = 64 * kKiB;
  // Decode (one row) is the case that runs every step.
  const int64_t items = parallel_items(roofline_us(estimate_cost(g, n, 1), d), cores);
  if (items > 0) t.chunk_bytes = std::max<int64_t>((weight_bytes + items - 1) / items, 4 * kKiB);
  return t;
}

// Shared memory matmul_gemm stages per workgroup: x and w tiles of kGemmTileK floats a row.
int64_t gemm_shared_bytes(int64_t tile_m, int64_t tile_n) { return kGemmTileK * (tile_m + tile_n) * 4; }
// matmul_gemm gives each invocation an 8x8 block of outputs.
int64_t gemm_invocations(int64_t tile_m, int64_t tile_n) { return (tile_m / 8) * (tile_n / 8); }

struct GpuCaps {
  int64_t subgroup, compute_units, max_invocations, shared_bytes;
};

GpuCaps gpu_caps(const DeviceInfo& d) {
  // Unknown limits: the minimums Vulkan guarantees; unknown units: a mid-size GPU.
  return {d.subgroup_size ? (int64_t)d.subgroup_size : 32, d.compute_units ? (int64_t)d.compute_units : 16,
          d.max_workgroup_invocations ? (int64_t)d.max_workgroup_invocations : 128,
          d.shared_memory_per_group_bytes ? (int64_t)d.shared_memory_per_group_bytes : 16 * kKiB};
}

bool gemm_fits(int64_t m, int64_t n, const GpuCaps& c) {
  return gemm_invocations(m, n) <= c.max_invocations && gemm_shared_bytes(m, n) <= c.shared_bytes;
}

TileParams choose_gpu(const Graph& g, const Node& n, const DeviceInfo& d) {
  const GpuCaps c = gpu_caps(d);
  const int64_t rows = g.value(n.inputs[1]).desc.shape[0];  // weight rows: the op's outputs
  const bool subgroups = d.kernel_isa != "spirv_portable";
  TileParams t;

  t.workgroup_size = std::min<int64_t>(std::max<int64_t>(4 * c.subgroup, 32), std::min<int64_t>(256, c.max_invocations));
  const int64_t pass_rows = subgroups ? 4 * std::max<int64_t>(1, t.workgroup_size / c.subgroup) : 4 * t.workgroup_size;
  int64_t passes = 1;
  while (passes < 8 && rows / (pass_rows * passes * 2) >= 4 * c.compute_units) passes *= 2;
  t.rows_per_workgroup = std::min<int64_t>(pass_rows * passes, 4096);

  t.tile_m = t.tile_n = 64;
  if (d.roofs.read_GBps > 0 && d.roofs.f32_GFLOPs > 0) {
    const double flops_per_byte = d.roofs.f32_GFLOPs / d.roofs.read_GBps;
    for (int64_t s : {32, 64, 128}) {
      t.tile_m = t.tile_n = s;
      if (2.0 * (double)(s * s) / (4.0 * (double)(2 * s)) >= flops_per_byte) break;
    }
  }
  while (t.tile_n > 32 && (rows + t.tile_n - 1) / t.tile_n < 2 * c.compute_units) t.tile_n /= 2;
  while (!gemm_fits(t.tile_m, t.tile_n, c) && (t.tile_m > 32 || t.tile_n > 32))
    (t.tile_m >= t.tile_n ? t.tile_m : t.tile_n) /= 2;
  return t;
}

// A GPU tile the device cannot run, as "FIELD=...: why"; "" when it can.
std::string gpu_tile_problem(const TileParams& t, const DeviceInfo& d) {
  const GpuCaps c = gpu_caps(d);
  if (t.workgroup_size > c.max_invocations)
    return "workgroup_size=" + std::to_string(t.workgroup_size) + " exceeds the device's " +
           std::to_string(c.max_invocations) + " invocations per workgroup";
  const int64_t m = t.tile_m ? t.tile_m : 64, n = t.tile_n ? t.tile_n : 64;
  if (gemm_invocations(m, n) > c.max_invocations)
    return "tile_m=" + std::to_string(m) + ", tile_n=" + std::to_string(n) + " needs " +
           std::to_string(gemm_invocations(m, n)) + " invocations per workgroup; the device allows " +
           std::to_string(c.max_invocations);
  if (gemm_shared_bytes(m, n) > c.shared_bytes)
    return "tile_m=" + std::to_string(m) + ", tile_n=" + std::to_string(n) + " needs " +
           std::to_string(gemm_shared_bytes(m, n)) + " bytes of shared memory; the device has " +
           std::to_string(c.shared_bytes);
  return "";
}

}  // namespace

Status tile(Graph& g, const PassContext& ctx) {
  for (Node& n : g.nodes) {
    if (n.op == OpKind::paged_attention && ctx.batch_invariant) n.tile.batch_invariant = 1;
    if (!is_matmul(n.op)) continue;
    // A placed node is tiled for its device (the fallback, a device --place
    // named); an unplaced one, or one on a device the context does not list, for the target.
    const std::optional<PlacementDevice> placed = n.device.empty() ? std::nullopt : ctx.find_device(n.device);
    const DeviceInfo* device = placed ? placed->info : ctx.device;
    if (device) n.tile = is_gpu(*device) ? choose_gpu(g, n, *device) : choose_cpu(g, n, *device);
    if (ctx.batch_invariant) n.tile.batch_invariant = 1;
    for (const TileOverride& o : ctx.tile_overrides) {
      if (o.op != "*" && o.op != name(n.op)) continue;
      if (const TileField* f = find_tile_field(o.field)) n.tile.*f->member = o.value;
    }
    if (device && is_gpu(*device))
      if (const std::string why = gpu_tile_problem(n.tile, *device); !why.empty())
        return invalid_argument("tile of " + std::string(name(n.op)) + " '" + n.label + "': " + why + " (--tile)");
  }
  return Status::ok();
}

}  // namespace tessera::graph::passes
