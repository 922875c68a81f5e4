// variants: portable
// Merges attention_split's partitions of one (row, head) into its token's output:
// out = sum_p e^(m_p - M) acc_p / sum_p e^(m_p - M) l_p, M the largest m_p.
#version 450
#include "common.glsl"

#define SPLIT 128u
layout(local_size_x = 64) in;

#include "attention.glsl"
layout(std430, set = 0, binding = 1) readonly buffer Partials { float partials[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float y[]; };

void main() {
  const uint row = gl_WorkGroupID.y, h = gl_WorkGroupID.x;
  uint t, s;
  if (!split_row(row, t, s)) return;
  const uint len = context_of(t, s);
  const uint used = min((len + SPLIT - 1u) / SPLIT, pc.n_splits);
  const uint base = (pc.off[0] >> 2) + (row * pc.n_heads + h) * pc.n_splits * (pc.head_dim + 2u);
  float big = NEG_BIG;
  for (uint p = 0u; p < used; ++p) big = max(big, partials[base + p * (pc.head_dim + 2u)]);
  float denom = 0.0;
  for (uint p = 0u; p < used; ++p) {
    const uint o = base + p * (pc.head_dim + 2u);
    denom += exp(partials[o] - big) * partials[o + 1u];
  }
  const uint yo = (pc.off[1] >> 2) + (t * pc.n_heads + h) * pc.head_dim;
  for (uint d = gl_LocalInvocationIndex; d < pc.head_dim; d += 64u) {
    float acc = 0.0;
    for (uint p = 0u; p < used; ++p) {
      const uint o = base + p * (pc.head_dim + 2u);
      acc += exp(partials[o] - big) * partials[o + 2u + d];
    }
    y[yo + d] = denom > 0.0 ? acc / denom : 0.0;
  }
}
