// RoPE (kernels/reference/rope.cpp) and its fusion with the KV append
// (kernels/reference/fused.cpp rope_kv_append), both through one kernel that
// rotates rows of x into rows of y: in place, into other rows, or into the
// pool rows a slot mapping names.
//
// Work item = (token, pair i): its thread finds cos/sin once (from the folded
// table, or computed) and rotates pair i of every head of the token, so the
// transcendentals cost n_tokens * rot_dims/2, not that times n_heads. When y
// is not x, items past the pairs copy the unrotated tail [2*(rot_dims/2),
// head_dim) of every head, one element each.
//
// Precision: the reference computes the angle in f32 with libm's powf, cosf
// and sinf (kernels/rope_math.h). The GPU's f32 powf/cosf/sinf are only
// within 2-4 ulp, and an error in freq is multiplied by the position, so
// here they are f64 pow, cos and sin rounded once to f32 (correctly rounded
// but for rare near-halfway cases). glibc's powf gave exactly that on 2M
// sampled exponents; its sinf and cosf are within an ulp but not correctly
// rounded, and differ from it by one ulp for about 1% of angles. Every other
// step is the reference's own f32 operation (IEEE division and
// multiplication, no FMA contraction in the rotation). So: from the folded
// table, bit for bit the reference; computed, bit for bit but where cos or
// sin is that ulp off, which moves an output by about an ulp of the inputs
// (a CPU emulation of this file measured 0.1-0.4% of outputs off, by at most
// 1.2e-7 for inputs in [-1, 1]; bit for bit with glibc's sinf/cosf put in).
#include <cmath>

#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/kv_rows.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;

// One rotation pass: rows of x [n_tokens, n_heads * head_dim] into rows of y
// of the same width.
struct RopeRows {
  const float* x = nullptr;
  float* y = nullptr;  // may equal x (then the tail is left alone)
  // Null: token t's output is y's row t. Else y's row out_slots[t], skipped
  // when outside [0, num_slots) (as kv_append skips such a slot).
  const int32_t* out_slots = nullptr;
  int64_t num_slots = 0;
  const int32_t* positions = nullptr;
  int64_t n_tokens = 0;
  int32_t n_heads = 0, head_dim = 0, rot_dims = 0;
  int32_t half = 0;      // rot_dims / 2: the rotated pairs
  int32_t per_token = 0; // items per token: half, plus the tail's elements when copy_tail
  bool half_split = false;
  bool copy_tail = false;
  float theta = 10000.0f, freq_scale = 1.0f;
  const float* table = nullptr;  // [table_rows, half, 2] (cos, sin), or null
  int64_t table_rows = 0;
  const float* freq_factors = nullptr;  // [half], or null
};

// cos and sin of pair i at `position`: kernels/rope_math.h's
// rope_cos_sin_scaled step for step, with powf, cosf and sinf taken in f64
// and rounded once (see the top of the file).
__device__ void rope_cos_sin(const RopeRows& r, int32_t position, int i, float& c, float& s) {
  const float exponent = (float)(2 * i) / (float)r.rot_dims;
  const float power = (float)pow((double)r.theta, (double)exponent);
  const float freq = 1.0f / power;
  float val = (float)position * freq;
  const float factor = r.freq_factors ? r.freq_factors[i] : 1.0f;
  if (factor != 1.0f) val /= factor;
  if (r.freq_scale != 1.0f) val *= r.freq_scale;
  double dc, ds;
  sincos((double)val, &ds, &dc);
  c = (float)dc;
  s = (float)ds;
}

// a*b - c*d and a*b + c*d as the reference rounds them: each product, then
// the sum, in f32, never fused into an FMA (nvcc and hipcc contract by
// default; the reference is built without contraction).
__device__ inline float mul_sub_unfused(float a, float b, float c, float d) {
#if defined(TESSERA_GPU_HIP)
#pragma clang fp contract(off)
  return a * b - c * d;
#else
  return __fsub_rn(__fmul_rn(a, b), __fmul_rn(c, d));
#endif
}
__device__ inline float mul_add_unfused(float a, float b, float c, float d) {
#if defined(TESSERA_GPU_HIP)
#pragma clang fp contract(off)
  return a * b + c * d;
#else
  return __fadd_rn(__fmul_rn(a, b), __fmul_rn(c, d));
#endif
}

__global__ void __launch_bounds__(kThreads) rope_rows_kernel(const RopeRows r) {
  const int64_t n = r.n_tokens * r.per_token;
  const int64_t width = (int64_t)r.n_heads * r.head_dim;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < n; g += stride) {
    const int64_t t = g / r.per_token;
    const int i = (int)(g % r.per_token);
    int64_t out_row = t;
    if (r.out_slots) {
      out_row = r.out_slots[t];
      if (out_row < 0 || out_row >= r.num_slots) continue;
    }
    const float* x = r.x + t * width;
    float* y = r.y + out_row * width;
    if (i >= r.half) {  // an unrotated tail element, copied (only when y is not x)
      const int e = 2 * r.half + (i - r.half);
      for (int h = 0; h < r.n_heads; ++h) y[(int64_t)h * r.head_dim + e] = x[(int64_t)h * r.head_dim + e];
      continue;
    }
    const int32_t position = r.positions[t];
    float c, s;
    if (r.table && position >= 0 && position < r.table_rows) {
      const float* cs = r.table + ((int64_t)position * r.half + i) * 2;
      c = cs[0];
      s = cs[1];
    } else {
      // Also a position past the table (the host refuses those steps), so
      // that it cannot read outside the table.
      rope_cos_sin(r, position, i, c, s);
    }
    const int e0 = r.half_split ? i : 2 * i;
    const int e1 = r.half_split ? i + r.half : 2 * i + 1;
    for (int h = 0; h < r.n_heads; ++h) {
      const int64_t o = (int64_t)h * r.head_dim;
      const float v0 = x[o + e0], v1 = x[o + e1];
      y[o + e0] = mul_sub_unfused(v0, c, v1, s);
      y[o + e1] = mul_add_unfused(v0, s, v1, c);
    }
  }
}

// Fills r's shape from p, over n_heads heads (p.n_heads for q, the KV heads
// for k); false when p is not one the kernel serves.
bool rope_rows_for(const RopeParams& p, int32_t n_heads, RopeRows& r) {
  if (n_heads < 0 || p.head_dim < 1 || p.rot_dims < 0 || p.rot_dims > p.head_dim) return false;
  r.n_heads = n_heads;
  r.head_dim = p.head_dim;
  r.rot_dims = p.rot_dims;
  r.half = p.rot_dims / 2;
  r.half_split = p.layout == RopeLayout::half_split;
  r.theta = p.theta;
  r.freq_scale = p.freq_scale;
  return true;
}

// Queues r, its source and destination set: items per token are the pairs,
// plus the tail's elements when the output is not rotated in place.
gpuError_t launch(RopeRows r, gpuStream_t s) {
  r.copy_tail = r.y != r.x || r.out_slots != nullptr;
  r.per_token = r.half + (r.copy_tail ? r.head_dim - 2 * r.half : 0);
  if (r.n_tokens == 0 || r.n_heads == 0 || r.per_token == 0) return gpuSuccess;
  rope_rows_kernel<<<grid_for(r.n_tokens * r.per_token, kThreads), kThreads, 0, s>>>(r);
  return gpuGetLastError();
}

}  // namespace

gpuError_t rope(const RopeArgs& a, gpuStream_t s) {
  if (a.n_tokens == 0) return gpuSuccess;
  RopeRows r;
  if (a.n_tokens < 0 || !rope_rows_for(a.p, a.p.n_heads, r)) return gpuErrorInvalidValue;
  r.x = a.x;
  r.y = a.x;
  r.positions = a.positions;
  r.n_tokens = a.n_tokens;
  r.table = a.table;
  r.table_rows = a.table_rows;
  r.freq_factors = a.freq_factors;
  return launch(r, s);
}

// As the reference: K rotated and appended with V, then Q rotated into q_out.
// The rotated K rows go straight to their pool slots (a.k_rot, the CPU's
// scratch, is not needed). Stream order makes the aliasing safe: q_out may be
// q, k or v, and k and v are fully consumed by the first two launches before
// the third writes q_out.
gpuError_t rope_kv_append(const RopeKvAppendArgs& a, gpuStream_t s) {
  if (a.n_tokens == 0) return gpuSuccess;
  const RopeParams& p = a.p.rope;
  const KvCacheParams& kv = a.p.kv;
  RopeRows k_rows, q_rows;
  if (a.n_tokens < 0 || kv.n_kv_heads < 0 || kv.head_dim != p.head_dim || !rope_rows_for(p, kv.n_kv_heads, k_rows) ||
      !rope_rows_for(p, p.n_heads, q_rows))
    return gpuErrorInvalidValue;
  k_rows.positions = q_rows.positions = a.positions;
  k_rows.n_tokens = q_rows.n_tokens = a.n_tokens;
  k_rows.table = q_rows.table = a.table;
  k_rows.table_rows = q_rows.table_rows = a.table_rows;
  k_rows.freq_factors = q_rows.freq_factors = a.freq_factors;

  k_rows.x = a.k;
  if (a.kv_dtype != DType::f32) return gpuErrorInvalidValue;  // the table refuses it: rope writes f32 rows
  k_rows.y = static_cast<float*>(a.k_pool);
  k_rows.out_slots = a.slot_mapping;
  k_rows.num_slots = a.num_slots;
  gpuError_t e = launch(k_rows, s);
  if (e != gpuSuccess) return e;

  e = append_kv_rows(nullptr, nullptr, a.v, a.v_pool, a.kv_dtype, a.slot_mapping, a.n_tokens, (int64_t)kv.n_kv_heads * kv.head_dim,
                     a.num_slots, s);
  if (e != gpuSuccess) return e;

  q_rows.x = a.q;
  q_rows.y = a.q_out;
  return launch(q_rows, s);
}

}  // namespace tessera::gpu::kernels
