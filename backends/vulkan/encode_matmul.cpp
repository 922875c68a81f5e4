// Matmul and embedding: the ops that read weights, and so the ones whose
// tensors can be larger than one storage-buffer binding may address
// (lavapipe: 128 MiB); those are bound in chunks of rows, one dispatch each.
#include <algorithm>

#include "backends/vulkan/encode.h"
#include "backends/vulkan/kernel_table.h"
#include "backends/vulkan/pipelines.h"

namespace tessera::vulkan {

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// matmul_gemv handles up to this many rows (kernels/vulkan/matmul_gemv.comp M_MAX).
constexpr uint64_t kGemvMaxRows = 4;
constexpr uint64_t kGemmTileK = 16;  // matmul_gemm's BK
constexpr uint64_t kGemmMinTileM = 8;  // matmul_gemm's BM: an invocation computes 8 rows

// The dispatch's tile, the shaders' defaults where the tiling pass left a
// field 0, checked against the device's limits: a tile from hand-written IR
// or --tile that the device cannot run is an error here, never a pipeline the
// driver rejects or a shader that overruns its shared memory.
struct MatmulTile {
  uint64_t gemv_invocations, gemv_rows, gemm_m, gemm_n;
};

Expected<MatmulTile> matmul_tile(const TileParams& t, DeviceContext& dev) {
  const bool subgroups = dev.pipelines().module_name("matmul_gemv").find("__subgroup") != std::string::npos;
  MatmulTile m;
  m.gemv_invocations = t.workgroup_size > 0 ? (uint64_t)t.workgroup_size : 32;
  m.gemv_rows = t.rows_per_workgroup > 0 ? (uint64_t)t.rows_per_workgroup : subgroups ? 16 : 128;
  m.gemm_m = t.tile_m > 0 ? (uint64_t)t.tile_m : 64;
  m.gemm_n = t.tile_n > 0 ? (uint64_t)t.tile_n : 64;
  const auto& l = dev.limits();
  const uint64_t max_inv = std::min(l.maxComputeWorkGroupInvocations, l.maxComputeWorkGroupSize[0]);
  const uint64_t gemm_inv = (m.gemm_m / 8) * (m.gemm_n / 8);
  const uint64_t gemm_shared = kGemmTileK * (m.gemm_m + m.gemm_n) * 4;
  if (m.gemv_rows % 4 != 0) return invalid_argument("matmul tile: rows_per_workgroup=" + std::to_string(m.gemv_rows) + " is not a multiple of 4");
  if (m.gemv_invocations > max_inv)
    return invalid_argument("matmul tile: workgroup_size=" + std::to_string(m.gemv_invocations) + " exceeds the device's " +
                            std::to_string(max_inv) + " invocations per workgroup");
  for (uint64_t side : {m.gemm_m, m.gemm_n})
    if (side != 32 && side != 64 && side != 128)
      return invalid_argument("matmul tile: tile_m and tile_n must be 32, 64 or 128, got " + std::to_string(side));
  if (gemm_inv > max_inv || gemm_shared > l.maxComputeSharedMemorySize)
    return invalid_argument("matmul tile: tile_m=" + std::to_string(m.gemm_m) + ", tile_n=" + std::to_string(m.gemm_n) +
                            " needs " + std::to_string(gemm_inv) + " invocations and " + std::to_string(gemm_shared) +
                            " bytes of shared memory; the device allows " + std::to_string(max_inv) + " and " +
                            std::to_string(l.maxComputeSharedMemorySize));
  return m;
}

// ggml's activation grid for a weight type: the q8 block its CPU vec_dot
// quantizes x to (q8_0 / q8_1: 32 elements, d in f16; q8_K: 256, d in f32),
// kernels/vulkan/q8_round_rows.comp. Plain weights take x as it is.
struct ActivationGrid {
  uint32_t block = 0;  // 0: none
  bool f16_scale = false;
};

// Every case named, no default: a new dtype is a -Wswitch warning here.
ActivationGrid activation_grid(DType t) {
  switch (t) {
    case DType::q8_0:
    case DType::q4_0:
    case DType::q4_1:
    case DType::q5_0:
    case DType::q5_1:
    case DType::iq4_nl: return {32, true};
    case DType::q2_K:
    case DType::q3_K:
    case DType::q4_K:
    case DType::q5_K:
    case DType::q6_K:
    case DType::iq4_xs: return {256, false};
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::i8:
    case DType::i32: return {};
  }
  return {};
}

bool same_range(const TensorBinding& a, const TensorBinding& b) {
  return a.buffer == b.buffer && a.offset == b.offset && a.bytes == b.bytes;
}

bool overlaps(const TensorBinding& a, const TensorBinding& b) {
  return a.buffer && a.buffer == b.buffer && a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

// x rounded to `grid` in scratch, for the matmul to read in place of x. Where
// an earlier dispatch already rounded the same x to the same grid and nothing
// since has written x or that copy (q, k and v projections, gate and up), the
// copy is reused: one rounding, and no barrier between the matmuls.
Expected<TensorBinding> rounded_activations(const TensorBinding& xb, ActivationGrid grid, uint64_t m_max, uint64_t k,
                                            uint32_t kind, EncodeContext& ctx, std::vector<EncodedDispatch>& out) {
  const std::vector<uint32_t> spec = {grid.block, grid.f16_scale ? 1u : 0u};
  std::vector<TensorBinding> written_since;
  for (size_t i = out.size(); i-- > 0;) {
    const EncodedDispatch& e = out[i];
    if (e.shader == "q8_round_rows" && e.spec == spec && same_range(e.bindings[0], xb)) {
      TensorBinding copy = e.bindings[1];
      if (std::any_of(written_since.begin(), written_since.end(), [&](const TensorBinding& w) { return overlaps(w, copy); }))
        break;  // the copy was overwritten (the scratch is shared)
      copy.written = false;
      return copy;
    }
    bool x_changed = false;
    for (const TensorBinding& b : e.bindings)
      if (b.written) {
        written_since.push_back(b);
        x_changed = x_changed || overlaps(b, xb);
      }
    if (x_changed) break;
  }
  TS_ASSIGN_OR_RETURN(TensorBinding rounded, ctx.scratch(m_max * k * sizeof(float)));
  rounded.written = true;
  EncodedDispatch e;
  e.shader = "q8_round_rows";
  e.spec = spec;
  e.bindings = {xb, rounded};
  e.push = {(uint32_t)k, kind, (uint32_t)m_max};
  spread_groups(ceil_div(m_max * (k / grid.block), 64), ctx.device().limits(), e.groups);
  out.push_back(std::move(e));
  rounded.written = false;
  return rounded;
}

}  // namespace

Status encode_matmul(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out) {
  const PlanTensor& x = d.inputs[0];
  const PlanTensor& w = d.inputs[1];
  const PlanTensor& y = d.outputs[0];
  if (!weight_dtype_supported(w.desc.dtype))
    return unsupported("no vulkan matmul for " + std::string(name(w.desc.dtype)) + " weights");
  const uint64_t n = (uint64_t)w.desc.shape[0], k = (uint64_t)w.desc.shape[1];
  const uint64_t row_bytes = (uint64_t)w.desc.row_bytes();
  const uint64_t m_max = (uint64_t)y.desc.shape[0];
  const uint32_t kind = rows_kind(y.rows);
  // Few rows: gemv. Many: gemm. A count that varies per step down to one row
  // (the logit rows of a prefill bucket): both, each skipping the steps of the other.
  // A cooperative-matrix gemm (VK_KHR_cooperative_matrix, once glslc has the
  // GLSL extension) would be chosen here, by a device feature, in place of matmul_gemm.
  // The two sum in different orders (gemv splits k over a subgroup), so under
  // batch_invariant gemm serves every step: each output one sequential sum
  // over k, whatever the rows (docs/backends.md, "Batch invariance").
  const bool invariant = d.tile.batch_invariant != 0;
  const bool gemv = !invariant && (m_max <= kGemvMaxRows || y.rows == RowCount::logit_rows);
  const bool gemm = invariant || m_max > kGemvMaxRows;

  TensorBinding xb = ctx.bind(x, false);
  const TensorBinding wb = ctx.bind(w, false), yb = ctx.bind(y, true);
  const uint64_t chunk = rows_per_binding(ctx.device(), row_bytes);
  TS_ASSIGN_OR_RETURN(const MatmulTile tile, matmul_tile(d.tile, ctx.device()));
  // Block-quantized weights multiply x as ggml's CPU backend rounds it
  // (docs/backends.md, "Vulkan weight types"): the shaders, unchanged, read
  // the rounded copy. (k is a whole number of weight blocks, so of grid blocks.)
  if (const ActivationGrid grid = activation_grid(w.desc.dtype); grid.block != 0) {
    TS_ASSIGN_OR_RETURN(xb, rounded_activations(xb, grid, m_max, k, kind, ctx, out));
  }
  const uint64_t gemv_rows = tile.gemv_rows;
  // x rows per gemm tile: the tile's, or for a bucket of fewer rows the
  // power of two (8 at least) that holds them, so a decode bucket computes
  // 8 rows where it needs 1 rather than 64. Which tile a row falls in never
  // changes its sum.
  uint64_t gemm_m = tile.gemm_m;
  while (gemm_m > kGemmMinTileM && gemm_m / 2 >= m_max) gemm_m /= 2;
  for (uint64_t first = 0; first < n; first += chunk) {
    const uint64_t rows = std::min(chunk, n - first);
    const TensorBinding wc = weight_rows(wb, row_bytes, first, rows);
    const std::vector<uint32_t> push = {(uint32_t)rows, (uint32_t)k, (uint32_t)row_bytes, (uint32_t)first, (uint32_t)n,
                                        kind, (uint32_t)m_max};
    if (gemv) {
      EncodedDispatch e;
      e.shader = "matmul_gemv";
      e.spec = {weight_type_constant(w.desc.dtype), m_max == 1 ? 1u : (uint32_t)kGemvMaxRows,
                (uint32_t)tile.gemv_invocations, (uint32_t)tile.gemv_rows};
      e.bindings = {xb, wc, yb};
      e.push = push;
      spread_groups(ceil_div(rows, gemv_rows), ctx.device().limits(), e.groups);
      out.push_back(std::move(e));
    }
    if (gemm) {
      EncodedDispatch e;
      e.shader = "matmul_gemm";
      e.spec = {weight_type_constant(w.desc.dtype), (uint32_t)gemm_m, (uint32_t)tile.gemm_n,
                (uint32_t)((gemm_m / 8) * (tile.gemm_n / 8))};
      e.bindings = {xb, wc, yb};
      e.push = push;
      e.push.push_back(gemv ? (uint32_t)kGemvMaxRows + 1 : 0u);
      e.groups[0] = (uint32_t)ceil_div(rows, tile.gemm_n);
      e.groups[1] = (uint32_t)ceil_div(m_max, gemm_m);
      if (e.groups[0] > ctx.device().limits().maxComputeWorkGroupCount[0] ||
          e.groups[1] > ctx.device().limits().maxComputeWorkGroupCount[1])
        return unsupported("matmul of " + std::to_string(m_max) + "x" + std::to_string(n) + " exceeds the device's workgroup counts");
      out.push_back(std::move(e));
    }
  }
  return Status::ok();
}

Status encode_embedding(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out) {
  const PlanTensor& table = d.inputs[0];
  const PlanTensor& y = d.outputs[0];
  if (!weight_dtype_supported(table.desc.dtype))
    return unsupported("no vulkan embedding for " + std::string(name(table.desc.dtype)) + " tables");
  const uint64_t vocab = (uint64_t)table.desc.shape[0], dim = (uint64_t)table.desc.shape[1];
  const uint64_t row_bytes = (uint64_t)table.desc.row_bytes();
  const uint64_t rows = (uint64_t)y.desc.shape[0];
  const auto& limits = ctx.device().limits();
  if (rows > (uint64_t)limits.maxComputeWorkGroupCount[1] * limits.maxComputeWorkGroupCount[2])
    return unsupported("embedding of " + std::to_string(rows) + " tokens exceeds the device's workgroup counts");

  const TensorBinding tb = ctx.bind(table, false), ib = ctx.bind(d.inputs[1], false), yb = ctx.bind(y, true);
  const uint64_t chunk = rows_per_binding(ctx.device(), row_bytes);
  for (uint64_t first = 0; first < vocab; first += chunk) {
    const uint64_t n = std::min(chunk, vocab - first);
    EncodedDispatch e;
    e.shader = "embedding";
    e.spec = {weight_type_constant(table.desc.dtype)};
    e.bindings = {weight_rows(tb, row_bytes, first, n), ib, yb};
    e.push = {(uint32_t)dim, (uint32_t)row_bytes, (uint32_t)vocab, (uint32_t)first, (uint32_t)n, rows_kind(y.rows), (uint32_t)rows};
    e.groups[0] = (uint32_t)ceil_div(dim, 64);
    e.groups[1] = (uint32_t)std::min<uint64_t>(rows, limits.maxComputeWorkGroupCount[1]);
    e.groups[2] = (uint32_t)ceil_div(rows, e.groups[1]);
    out.push_back(std::move(e));
  }
  return Status::ok();
}

}  // namespace tessera::vulkan
