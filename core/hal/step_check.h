#pragma once
// The checks every backend makes on a step's metadata before any kernel
// follows an index in it: a bad token id, position, slot or block table entry
// is a Status, never an out-of-bounds access. Shared so that every backend
// refuses exactly the same steps with the same messages.
#include <cstdint>

#include "core/hal/plan.h"
#include "core/status.h"

namespace tessera {

// The bounds the plan's kernels index with, as the CPU backend derives them:
// from the smallest pool any kv_append or paged_attention touches. A field no
// kernel of the plan follows is not checked (kv_slots 0, block_size 0, vocab -1).
struct StepLimits {
  int64_t kv_slots = 0;    // slot_mapping entries must be below
  int64_t kv_blocks = 0;   // block table entries must be below
  int32_t block_size = 0;  // of the KV pools; 0 when the plan has none
  int64_t vocab = -1;      // token ids must be below (smallest table an embedding reads token_ids from)
  int64_t rope_rows = 0;   // positions must be below (the smallest folded RoPE table a rope reads); 0: no table
};

StepLimits step_limits(const Plan& plan);

Status check_step_args(const ShapeBucket& bucket, const StepLimits& limits, const StepArgs& args);
// The part of check_step_args that needs no bucket: the arrays are there.
// What may be read before a bucket is chosen (a step copied to other ranks).
Status check_step_arrays(const StepArgs& args);

// The host array behind a step field, and how many int32 of it this step holds.
const int32_t* step_field_data(const StepArgs& a, StepField f);
int64_t step_field_count(const StepArgs& a, StepField f, const ShapeBucket& b);

}  // namespace tessera
