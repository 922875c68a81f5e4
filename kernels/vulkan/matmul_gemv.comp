// variants: portable subgroup
// per weight type
// matmul for few rows (decode): y[m, n] = sum_k x[m, k] * w[n, k], m < M_MAX.
// subgroup variant: each subgroup takes four weight rows of its workgroup at
// a time; its invocations stride over k a quant block (32 elements) at a time
// and meet with subgroupAdd, so there is no shared memory and no barrier
// (lavapipe, where barriers are costly, runs it well too).
// portable variant: each invocation takes four weight rows at a time, no reductions at all.
// Quant blocks are dequantized here (the scale applied once per 16 or 32
// products, a min as min * Σx) and summed in f32. A weight bound in chunks (larger than one
// binding may address) is one dispatch per chunk of rows; n_base is the
// chunk's first row.
#version 450
#include "common.glsl"

// The tile (TileParams workgroup_size, rows_per_workgroup; chosen by the
// tiling pass, set by backends/vulkan/encode_matmul.cpp): WG invocations
// compute ROWS_PER_GROUP weight rows, RB at a time per subgroup (subgroup
// variant) or per invocation (portable), in as many passes as that takes.
// One SPIR-V module per weight type (the "per weight type" line below;
// backends/vulkan/CMakeLists.txt passes TS_WTYPE): a driver handed every
// type's code behind a specialization constant inlines and unrolls all of
// it before it folds the constant away (lavapipe: 1.2 s a pipeline, against
// 40-70 ms for one type's module). constant_id 0 stays the weight type in
// the host's specialization list, which picks the module.
const uint WTYPE = TS_WTYPE;
layout(constant_id = 1) const uint M_MAX = 4;  // 1 for decode buckets
layout(constant_id = 2) const uint WG = 32;
layout(constant_id = 3) const uint ROWS_PER_GROUP = 16;  // a multiple of RB
layout(local_size_x_id = 2) in;
#ifdef TS_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
const uint RB = 4u;  // weight rows a pass takes at once

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
} pc;

#include "weights.glsl"

// x[m, e0 .. e0+31] as vec4s; x_vec (uniform): x rows are vec4-aligned.
void load_x32_full(uint m, uint e0, bool x_vec, out vec4 xv[8]) {
  const uint at = (pc.off[0] >> 2) + m * pc.k + e0;
  if (x_vec) {
    [[unroll]] for (uint q = 0u; q < 8u; ++q) xv[q] = x_quads[(at >> 2) + q];
  } else {
    [[unroll]] for (uint q = 0u; q < 8u; ++q) xv[q] = vec4(x[at + 4u * q], x[at + 4u * q + 1u], x[at + 4u * q + 2u], x[at + 4u * q + 3u]);
  }
}

// The same for the last, partial 32 of a row: zero past k.
void load_x32_tail(uint m, uint e0, out vec4 xv[8]) {
  const uint at = (pc.off[0] >> 2) + m * pc.k + e0;
  [[unroll]] for (uint q = 0u; q < 8u; ++q)
    [[unroll]] for (uint c = 0u; c < 4u; ++c) xv[q][c] = e0 + 4u * q + c < pc.k ? x[at + 4u * q + c] : 0.0;
}

// Σ x * v over the halves of a unit (elements 0..15, 16..31).
vec2 dot16x2(vec4 xv[8], float v[32]) {
  vec2 s = vec2(0.0);
  [[unroll]] for (uint q = 0u; q < 8u; ++q) s[q >> 2] += dot(xv[q], vec4(v[4u * q], v[4u * q + 1u], v[4u * q + 2u], v[4u * q + 3u]));
  return s;
}

// Σ x over the halves, for the mins.
vec2 sum16x2(vec4 xv[8]) {
  vec2 s = vec2(0.0);
  [[unroll]] for (uint q = 0u; q < 8u; ++q) s[q >> 2] += dot(xv[q], vec4(1.0));
  return s;
}

// One unit's contribution: scales sm.xy per half, mins sm.zw (weights.glsl
// w_load32_full), x's sums xs. Types with one scale per unit add the halves first.
float unit_dot(vec4 xv[8], float v[32], vec4 sm, vec2 xs) {
  const vec2 d = dot16x2(xv, v);
  float s = W_SPLIT ? sm.x * d.x + sm.y * d.y : sm.x * (d.x + d.y);
  if (W_MIN) s += sm.z * xs.x + sm.w * xs.y;
  return s;
}

// Partial sums of RB weight rows (row0 .. row0+RB-1; rows past n repeat the
// last and are not stored) against every x row, over 32-element units first,
// first + step, ... (a unit is one quant block): each x load serves RB rows.
// The partial last unit of a plain-typed row goes to whoever's turn it is.
void rows_dot(uint row0, uint m_rows, uint first, uint step, out float acc[RB][M_MAX]) {
  [[unroll]] for (uint r = 0u; r < RB; ++r)
    [[unroll]] for (uint m = 0u; m < M_MAX; ++m) acc[r][m] = 0.0;
  const uint full = pc.k / 32u;
  const bool x_vec = (((pc.off[0] >> 2) | pc.k) & 3u) == 0u;
  const bool w_vec = w_rows_vec16(pc.off[1], pc.row_bytes);
  uint ro[RB];
  [[unroll]] for (uint r = 0u; r < RB; ++r) ro[r] = pc.off[1] + min(row0 + r, pc.n - 1u) * pc.row_bytes;
  uint u = first;
  for (; u < full; u += step) {
    vec4 xv[M_MAX][8];
    vec2 xs[M_MAX];
    [[unroll]] for (uint m = 0u; m < M_MAX; ++m) {
      xs[m] = vec2(0.0);
      if (m < m_rows) {
        load_x32_full(m, u * 32u, x_vec, xv[m]);
        if (W_MIN) xs[m] = sum16x2(xv[m]);
      }
    }
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      float wv[32];
      const vec4 sm = w_load32_full(ro[r], u * 32u, w_vec, wv);
      [[unroll]] for (uint m = 0u; m < M_MAX; ++m)
        if (m < m_rows) acc[r][m] += unit_dot(xv[m], wv, sm, xs[m]);
    }
  }
  if (u == full && full * 32u < pc.k) {
    vec4 xv[M_MAX][8];
    [[unroll]] for (uint m = 0u; m < M_MAX; ++m)
      if (m < m_rows) load_x32_tail(m, u * 32u, xv[m]);
    // Plain types only (quant rows are whole units): scale 1, no min.
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      float wv[32];
      w_load32_tail(ro[r], u * 32u, pc.k, wv);
      [[unroll]] for (uint m = 0u; m < M_MAX; ++m)
        if (m < m_rows) {
          const vec2 d = dot16x2(xv[m], wv);
          acc[r][m] += d.x + d.y;
        }
    }
  }
}

void main() {
  const uint m_rows = resolve_rows(pc.rows_kind, pc.rows_fixed);
  // More rows than this kernel handles: matmul_gemm (recorded beside it) does the step.
  if (m_rows > M_MAX) return;
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint yo = (pc.off[2] >> 2) + pc.n_base;
  float acc[RB][M_MAX];
#ifdef TS_SUBGROUP
  for (uint r = gl_SubgroupID * RB; r < ROWS_PER_GROUP; r += gl_NumSubgroups * RB) {
    const uint row0 = group * ROWS_PER_GROUP + r;
    if (row0 >= pc.n) break;
    // A subgroup wider than the workgroup (wave64 with 32 invocations), or the
    // last of a workgroup that is not a whole number of subgroups, has fewer lanes.
    const uint lanes = min(gl_SubgroupSize, WG - gl_SubgroupID * gl_SubgroupSize);
    rows_dot(row0, m_rows, gl_SubgroupInvocationID, lanes, acc);
    [[unroll]] for (uint i = 0u; i < RB; ++i)
      [[unroll]] for (uint m = 0u; m < M_MAX; ++m) acc[i][m] = subgroupAdd(acc[i][m]);
    if (subgroupElect())
      [[unroll]] for (uint i = 0u; i < RB; ++i)
        [[unroll]] for (uint m = 0u; m < M_MAX; ++m)
          if (m < m_rows && row0 + i < pc.n) y[yo + m * pc.n_total + row0 + i] = acc[i][m];
  }
#else
  for (uint r = gl_LocalInvocationIndex * RB; r < ROWS_PER_GROUP; r += WG * RB) {
    const uint row0 = group * ROWS_PER_GROUP + r;
    if (row0 >= pc.n) return;
    rows_dot(row0, m_rows, 0u, 1u, acc);
    [[unroll]] for (uint i = 0u; i < RB; ++i)
      [[unroll]] for (uint m = 0u; m < M_MAX; ++m)
        if (m < m_rows && row0 + i < pc.n) y[yo + m * pc.n_total + row0 + i] = acc[i][m];
  }
#endif
}
