#pragma once
// StepArrays, and a step's arrays padded to its shape bucket's full counts, for backends
// that record a bucket's launches once and replay them every step (CUDA and
// HIP graphs, backends/cuda/gpu_executable.cpp): the launches then see the
// same row and sequence counts every step, and the padding is inert.
//
// What makes each pad inert, given the kernels' contracts (kernels/reference):
// - padded tokens have token id 0 and position 0 (valid for every table and
//   RoPE row), and slot -1, which kv_append and rope_kv_append skip;
// - padded sequences are empty: their query_start entries all equal the real
//   token count, so a padded token lies in no sequence and attention leaves
//   its row alone; their lengths are 0 and their block table rows 0;
// - logit rows are padded with row 0.
// Rows of padded tokens hold whatever their ops compute from that; nothing a
// real row reads depends on them (every op but attention is row by row, and
// attention reads keys only through the KV pools).
#include <cstdint>
#include <vector>

#include "core/hal/plan.h"

namespace tessera {

// A step's arrays held in vectors (a padded step's, a test's, a bench's).
struct StepArrays {
  std::vector<int32_t> token_ids, positions, slot_mapping, query_start, seq_lens, block_tables, logit_rows;

  // The step over these arrays, its counts their sizes: n_tokens tokens,
  // n_seqs = seq_lens.size(), n_logit_rows logit rows.
  StepArgs args() const;
};

// Pads `a` (already checked against `b` by check_step_args) to the bucket's
// token and sequence counts, and its logit rows to `logit_rows` (at least
// a.n_logit_rows, at most b.max_logit_rows). Reuses out's storage.
void pad_step(const StepArgs& a, const ShapeBucket& b, int32_t logit_rows, StepArrays& out);

}  // namespace tessera
