// Shared by every Tessera compute shader: the step parameters (binding 0,
// written by the host each step; the recorded command buffer is sized for
// the bucket's maximum and shaders skip rows beyond this step's counts), the
// row-count rule of a tensor, and helpers for reading packed words.
//
// Bindings 1..8 are the dispatch's tensors. Each shader's push constants
// start with `uint off[8]`: the byte offset of its tensor inside the bound
// range of binding i+1 (the host binds at an aligned offset below it).

#extension GL_EXT_control_flow_attributes : require

layout(std430, set = 0, binding = 0) readonly buffer StepParams {
  uint n_tokens;
  uint n_seqs;
  uint n_logit_rows;
  uint max_blocks_per_seq;
} step_params;

// How a tensor's outermost dimension is resolved (core/hal/plan.h RowCount).
const uint ROWS_FIXED = 0u;
const uint ROWS_TOKENS = 1u;
const uint ROWS_LOGITS = 2u;

uint resolve_rows(uint kind, uint fixed_rows) {
  if (kind == ROWS_TOKENS) return min(step_params.n_tokens, fixed_rows);
  if (kind == ROWS_LOGITS) return min(step_params.n_logit_rows, fixed_rows);
  return fixed_rows;
}

// Weight element types (the host passes these as specialization constants).
const uint WT_F32 = 0u;
const uint WT_F16 = 1u;
const uint WT_BF16 = 2u;
const uint WT_Q8_0 = 3u;
const uint WT_Q4_0 = 4u;
const uint WT_Q4_K = 5u;
const uint WT_Q4_1 = 6u;
const uint WT_Q5_0 = 7u;
const uint WT_Q5_1 = 8u;
const uint WT_IQ4_NL = 9u;
const uint WT_Q2_K = 10u;
const uint WT_Q3_K = 11u;
const uint WT_Q5_K = 12u;
const uint WT_Q6_K = 13u;
const uint WT_IQ4_XS = 14u;
