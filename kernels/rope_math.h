#pragma once
// The one definition of RoPE's angle, in f32 with llama2.c's formulas. The
// reference and CPU kernels (on the fly) and rope_table (folded at load) all
// call it, so a table entry is bit for bit what the kernel would compute.
#include <cmath>
#include <cstdint>

namespace tessera::kernels {

inline void rope_cos_sin(int32_t position, int pair, int rot_dims, float theta, float& c, float& s) {
  const float freq = 1.0f / powf(theta, (float)(2 * pair) / (float)rot_dims);
  const float val = (float)position * freq;
  c = cosf(val);
  s = sinf(val);
}

// With llama.cpp's frequency scaling: the angle divided by the pair's
// frequency factor (llama3's rope_freqs; 1 without), then times freq_scale
// (linear position scaling), in ggml's order. Equal to rope_cos_sin when
// both are 1.
inline void rope_cos_sin_scaled(int32_t position, int pair, int rot_dims, float theta, float freq_scale, float factor,
                                float& c, float& s) {
  const float freq = 1.0f / powf(theta, (float)(2 * pair) / (float)rot_dims);
  float val = (float)position * freq;
  if (factor != 1.0f) val /= factor;
  if (freq_scale != 1.0f) val *= freq_scale;
  c = cosf(val);
  s = sinf(val);
}

}  // namespace tessera::kernels
