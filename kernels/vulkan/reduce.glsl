// Workgroup-wide reductions. The includer defines WG (the workgroup size, a
// power of two) and calls these from uniform control flow; every invocation
// gets the result. With TS_SUBGROUP (the "subgroup" variant) each subgroup
// reduces with GL_KHR_shader_subgroup_arithmetic and the partial results
// meet in shared memory; without it (the "portable" variant, for devices
// that lack subgroup arithmetic) a shared-memory tree does the whole job.

#ifdef TS_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float red_f[WG];
shared uint red_u[WG];

float wg_sum(float v) {
#ifdef TS_SUBGROUP
  v = subgroupAdd(v);
  barrier();  // earlier readers of red_f are done
  if (subgroupElect()) red_f[gl_SubgroupID] = v;
  barrier();
  float s = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) s += red_f[i];
  return s;
#else
  const uint lid = gl_LocalInvocationIndex;
  barrier();
  red_f[lid] = v;
  barrier();
  [[unroll]] for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (lid < s) red_f[lid] += red_f[lid + s];
    barrier();
  }
  return red_f[0];
#endif
}

float wg_max(float v) {
#ifdef TS_SUBGROUP
  v = subgroupMax(v);
  barrier();
  if (subgroupElect()) red_f[gl_SubgroupID] = v;
  barrier();
  float m = red_f[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) m = max(m, red_f[i]);
  return m;
#else
  const uint lid = gl_LocalInvocationIndex;
  barrier();
  red_f[lid] = v;
  barrier();
  [[unroll]] for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (lid < s) red_f[lid] = max(red_f[lid], red_f[lid + s]);
    barrier();
  }
  return red_f[0];
#endif
}

// The largest v and, among equal maxima, the smallest index (argmax's rule:
// the first index of the maximum).
uint wg_argmax(float v, uint idx) {
#ifdef TS_SUBGROUP
  const float m = subgroupMax(v);
  const uint i = subgroupMin(v == m ? idx : 0xFFFFFFFFu);
  barrier();
  if (subgroupElect()) {
    red_f[gl_SubgroupID] = m;
    red_u[gl_SubgroupID] = i;
  }
  barrier();
  float best = red_f[0];
  uint best_i = red_u[0];
  for (uint s = 1u; s < gl_NumSubgroups; ++s)
    if (red_f[s] > best || (red_f[s] == best && red_u[s] < best_i)) {
      best = red_f[s];
      best_i = red_u[s];
    }
  return best_i;
#else
  const uint lid = gl_LocalInvocationIndex;
  barrier();
  red_f[lid] = v;
  red_u[lid] = idx;
  barrier();
  [[unroll]] for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (lid < s) {
      const float o = red_f[lid + s];
      const uint oi = red_u[lid + s];
      if (o > red_f[lid] || (o == red_f[lid] && oi < red_u[lid])) {
        red_f[lid] = o;
        red_u[lid] = oi;
      }
    }
    barrier();
  }
  return red_u[0];
#endif
}
