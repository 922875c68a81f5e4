// variants: portable
// per weight type
// matmul for many rows (prefill): y = x · wᵀ in BM x BN output tiles (the
// TileParams tile_m x tile_n the tiling pass chose: 32, 64 or 128 a side),
// (BM/8)·(BN/8) invocations each accumulating an 8x8 block in registers. Per
// 16-wide step of k the workgroup stages the x tile and the dequantized w
// tile in shared memory (16·(BM+BN)·4 bytes, checked against the device's
// limit by the tiling pass and the encoder), laid out so that every
// inner-loop read is a vec4: each read feeds 16 multiply-adds. (On CPU
// implementations such as lavapipe every shader load costs as much as a
// dozen multiply-adds, so this ratio sets the speed; on GPUs it is the
// classic register-blocked SGEMM.) Rows past this step's m, columns past n
// and k past the end are zero-filled and not stored.
// The place for a cooperative-matrix variant (VK_KHR_cooperative_matrix) is
// a sibling shader with the same bindings and push constants; Debian 12's
// glslc has no GLSL extension for it yet.
#version 450
#include "common.glsl"

#define BK 16u
// One SPIR-V module per weight type (the "per weight type" line below;
// backends/vulkan/CMakeLists.txt passes TS_WTYPE): a driver handed every
// type's code behind a specialization constant inlines and unrolls all of
// it before it folds the constant away (lavapipe: 1.2 s a pipeline, against
// 40-70 ms for one type's module). constant_id 0 stays the weight type in
// the host's specialization list, which picks the module.
const uint WTYPE = TS_WTYPE;
layout(constant_id = 1) const uint BM = 64;  // tile_m
layout(constant_id = 2) const uint BN = 64;  // tile_n
layout(constant_id = 3) const uint WG = 64;  // (BM / 8) * (BN / 8)
layout(local_size_x_id = 3) in;

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer X4 { vec4 x_quads[]; };
layout(std430, set = 0, binding = 2) readonly buffer Wt { uint w_words[]; };
layout(std430, set = 0, binding = 2) readonly buffer Wt4 { uvec4 w_quads[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint n;        // weight rows in this dispatch
  uint k;
  uint row_bytes;
  uint n_base;   // first output column of this dispatch
  uint n_total;  // output row stride
  uint rows_kind, rows_fixed;
  uint min_m;    // steps with fewer rows are left to matmul_gemv (recorded beside it); 0: none
} pc;

#include "weights.glsl"

// [k][four consecutive rows]: xs[kk][i] holds x rows 4i .. 4i+3 of the tile at k0 + kk.
shared vec4 xs[BK][BM / 4u];
shared vec4 ws[BK][BN / 4u];

// x row m0 + r (or, past m, the last row, then zeroed) at k0 .. k0+15 into xs.
void stage_x(uint r, uint m0, uint m_rows, uint k0, bool whole, bool x_vec) {
  const uint xm = min(m0 + r, m_rows - 1u);
  const bool in_range = m0 + r < m_rows;
  float xv[16];
  const uint xa = (pc.off[0] >> 2) + xm * pc.k + k0;
  if (whole && x_vec) {
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      const vec4 v = x_quads[xa / 4u + q];
      xv[4u * q] = v.x; xv[4u * q + 1u] = v.y; xv[4u * q + 2u] = v.z; xv[4u * q + 3u] = v.w;
    }
  } else if (whole) {
    [[unroll]] for (uint j = 0u; j < 16u; ++j) xv[j] = x[xa + j];
  } else {
    [[unroll]] for (uint j = 0u; j < 16u; ++j) xv[j] = k0 + j < pc.k ? x[xa + j] : 0.0;
  }
  [[unroll]] for (uint j = 0u; j < 16u; ++j) xs[j][r >> 2][r & 3u] = in_range ? xv[j] : 0.0;
}

// Weight row n0 + c, dequantized, the same way into ws.
void stage_w(uint c, uint n0, uint k0, bool whole, bool w_vec) {
  const uint wn = min(n0 + c, pc.n - 1u);
  const bool in_range = n0 + c < pc.n;
  float wa[8], wb[8];
  const uint ro = pc.off[1] + wn * pc.row_bytes;
  vec2 sa, sb;  // scale, min (weights.glsl w_load8_full)
  const bool b_in = whole || k0 + 8u < pc.k;
  if (whole) {
    sa = w_load8_full(ro, k0, w_vec, wa);
    sb = w_load8_full(ro, k0 + 8u, w_vec, wb);
  } else {
    sa = w_load8_tail(ro, k0, pc.k, wa);
    sb = b_in ? w_load8_tail(ro, k0 + 8u, pc.k, wb) : vec2(0.0);
  }
  // Selects, not products with zero: wb is unset past k.
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    ws[j][c >> 2][c & 3u] = in_range ? sa.x * wa[j] + sa.y : 0.0;
    ws[j + 8u][c >> 2][c & 3u] = in_range && b_in ? sb.x * wb[j] + sb.y : 0.0;
  }
}

void main() {
  const uint m_rows = resolve_rows(pc.rows_kind, pc.rows_fixed);
  if (m_rows < pc.min_m) return;
  const uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
  if (m0 >= m_rows || n0 >= pc.n) return;
  const uint lid = gl_LocalInvocationIndex;
  const uint tx = lid % (BN / 8u), ty = lid / (BN / 8u);
  const bool x_vec = (((pc.off[0] >> 2) | pc.k) & 3u) == 0u;
  const bool w_vec = w_rows_vec16(pc.off[1], pc.row_bytes);

  // rows ty*4+i (i < 4) and BM/2+ty*4+i-4; columns tx*4.. and BN/2+tx*4..
  vec4 acc[8][2];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) acc[i][0] = acc[i][1] = vec4(0.0);

  for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
    const bool whole = k0 + 16u <= pc.k;  // uniform
    for (uint r = lid; r < BM; r += WG) stage_x(r, m0, m_rows, k0, whole, x_vec);
    for (uint c = lid; c < BN; c += WG) stage_w(c, n0, k0, whole, w_vec);
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      const vec4 a0 = xs[kk][ty], a1 = xs[kk][BM / 8u + ty];
      const vec4 b0 = ws[kk][tx], b1 = ws[kk][BN / 8u + tx];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        acc[i][0] += a0[i] * b0;
        acc[i][1] += a0[i] * b1;
        acc[i + 4u][0] += a1[i] * b0;
        acc[i + 4u][1] += a1[i] * b1;
      }
    }
    barrier();
  }

  const uint yo = (pc.off[2] >> 2) + pc.n_base;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const uint m = m0 + (i < 4u ? ty * 4u + i : BM / 2u + ty * 4u + i - 4u);
    if (m >= m_rows) continue;
    [[unroll]] for (uint h = 0u; h < 2u; ++h)
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const uint nn = n0 + h * (BN / 2u) + tx * 4u + c;
        if (nn < pc.n) y[yo + m * pc.n_total + nn] = acc[i][h][c];
      }
  }
}
