// variants: portable
// x rows rounded to ggml's 8-bit activation grid, written as f32 for the
// matmul shaders that follow (backends/vulkan/encode_matmul.cpp records it
// before a block-quantized matmul): per block of BLOCK elements of a row,
// amax = max|x|, q = round-half-even(x · 127/amax), and the value q·d.
//   BLOCK 32, SCALE_F16 1: ggml's q8_0 / q8_1 (the x of q8_0, q4_0, q4_1,
//     q5_0, q5_1, iq4_nl weights): d = amax/127 rounded to f16, q from the
//     f32 127/amax (ggml's x86 quantize_row_q8_0 and _q8_1).
//   BLOCK 256, SCALE_F16 0: ggml's q8_K (the x of the K-quants and iq4_xs):
//     quantize_row_q8_K_ref takes iscale = -127/max of the element of largest
//     |x| and d = 1/iscale; its sign cancels in q·d, so d = 1/(127/amax) here.
// One invocation per block. Division here is IEEE on lavapipe; a GPU's
// shader division (2.5 ulp in Vulkan) may move d by an ulp and, rarely, a q
// across a rounding tie: noise far below the rounding itself.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint BLOCK = 32;
layout(constant_id = 1) const uint SCALE_F16 = 1;
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint off[8];
  uint k;  // row length, a multiple of BLOCK
  uint rows_kind, rows_fixed;
} pc;

// v (>= 0) rounded to the nearest f16 value, ties to even (F16C's
// _cvtss_sh(v, 0), which ggml's FP32_TO_FP16 is on x86), kept in f32. Integer
// arithmetic, not packHalf2x16, whose rounding Vulkan leaves to the device.
float round_to_f16(float v) {
  // Below f16's smallest normal (2^-14): multiples of 2^-24; the scalings are exact.
  if (v < 6.103515625e-05) return roundEven(v * 16777216.0) * 5.9604644775390625e-08;
  // Normal: keep 10 of f32's 23 mantissa bits; a carry moves into the exponent.
  const uint u = floatBitsToUint(v);
  const uint rest = u & 0x1fffu, kept = u & ~0x1fffu;
  const bool up = rest > 0x1000u || (rest == 0x1000u && (kept & 0x2000u) != 0u);
  return uintBitsToFloat(up ? kept + 0x2000u : kept);
}

void main() {
  const uint blocks_per_row = pc.k / BLOCK;
  const uint b = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationIndex;
  const uint row = b / blocks_per_row;
  if (row >= resolve_rows(pc.rows_kind, pc.rows_fixed)) return;
  const uint xa = (pc.off[0] >> 2) + b * BLOCK, ya = (pc.off[1] >> 2) + b * BLOCK;
  float amax = 0.0;
  for (uint j = 0u; j < BLOCK; ++j) amax = max(amax, abs(x[xa + j]));
  const float iscale = amax > 0.0 ? 127.0 / amax : 0.0;
  const float d = SCALE_F16 != 0u ? round_to_f16(amax / 127.0) : (amax > 0.0 ? 1.0 / iscale : 0.0);
  for (uint j = 0u; j < BLOCK; ++j) {
    precise const float q = clamp(roundEven(x[xa + j] * iscale), -127.0, 127.0);
    y[ya + j] = q * d;
  }
}
