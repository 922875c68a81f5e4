#include "core/hal/step_check.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>

namespace tessera {

const int32_t* step_field_data(const StepArgs& a, StepField f) {
  switch (f) {
    case StepField::token_ids: return a.token_ids;
    case StepField::positions: return a.positions;
    case StepField::slot_mapping: return a.slot_mapping;
    case StepField::query_start: return a.query_start;
    case StepField::seq_lens: return a.seq_lens;
    case StepField::block_tables: return a.block_tables;
    case StepField::logit_rows: return a.logit_rows;
    case StepField::none: return nullptr;
  }
  return nullptr;
}

int64_t step_field_count(const StepArgs& a, StepField f, const ShapeBucket& b) {
  switch (f) {
    case StepField::token_ids:
    case StepField::positions:
    case StepField::slot_mapping: return a.n_tokens;
    case StepField::query_start: return a.n_seqs + 1;
    case StepField::seq_lens: return a.n_seqs;
    case StepField::block_tables: return (int64_t)a.n_seqs * b.max_blocks_per_seq;
    case StepField::logit_rows: return a.n_logit_rows;
    case StepField::none: return 0;
  }
  return 0;
}

StepLimits step_limits(const Plan& plan) {
  StepLimits l;
  int64_t slots = INT64_MAX;
  for (const Dispatch& d : plan.dispatches) {
    if (d.op == OpKind::kv_append && d.inputs.size() >= 5) {
      slots = std::min(slots, d.inputs[3].desc.shape[0]);
      l.block_size = std::get<KvCacheParams>(d.params).block_size;
    } else if (d.op == OpKind::paged_attention && d.inputs.size() >= 3) {
      slots = std::min(slots, d.inputs[1].desc.shape[0]);
      l.block_size = std::get<AttentionParams>(d.params).block_size;
    } else if (((d.op == OpKind::rope && d.inputs.size() == 3) || (d.op == OpKind::rope_kv_append && d.inputs.size() == 8)) &&
               d.inputs.back().desc.shape.rank == 3) {  // a folded table, not frequency factors
      const int64_t rows = d.inputs.back().desc.shape[0];
      l.rope_rows = l.rope_rows == 0 ? rows : std::min(l.rope_rows, rows);
    }
    if (d.op == OpKind::embedding && d.inputs.size() >= 2) {
      const PlanBuffer& pb = plan.buffers[d.inputs[1].buffer];
      if (pb.role == BufferRole::step_input && pb.field == StepField::token_ids)
        l.vocab = l.vocab < 0 ? d.inputs[0].desc.shape[0] : std::min(l.vocab, d.inputs[0].desc.shape[0]);
    }
  }
  if (slots != INT64_MAX) {
    l.kv_slots = slots;
    l.kv_blocks = l.block_size > 0 ? slots / l.block_size : 0;
  }
  return l;
}

Status check_step_arrays(const StepArgs& a) {
  if (!a.token_ids || !a.positions || !a.slot_mapping || !a.query_start || !a.seq_lens || !a.block_tables ||
      (a.n_logit_rows > 0 && !a.logit_rows))
    return invalid_argument("step: token_ids, positions, slot_mapping, query_start, seq_lens and block_tables are required");
  return Status::ok();
}

Status check_step_args(const ShapeBucket& b, const StepLimits& lim, const StepArgs& a) {
  TS_TRY(check_step_arrays(a));
  if (a.n_tokens < 1 || a.n_tokens > b.max_tokens)
    return invalid_argument("step: n_tokens " + std::to_string(a.n_tokens) + " outside [1, " + std::to_string(b.max_tokens) + "]");
  if (a.n_seqs < 1 || a.n_seqs > b.max_seqs)
    return invalid_argument("step: n_seqs " + std::to_string(a.n_seqs) + " outside [1, " + std::to_string(b.max_seqs) + "]");
  if (a.n_logit_rows < 0 || a.n_logit_rows > b.max_logit_rows)
    return invalid_argument("step: n_logit_rows " + std::to_string(a.n_logit_rows) + " outside [0, " + std::to_string(b.max_logit_rows) + "]");
  for (int32_t i = 0; i < a.n_logit_rows; ++i)
    if (a.logit_rows[i] < 0 || a.logit_rows[i] >= a.n_tokens)
      return invalid_argument("step: logit_rows[" + std::to_string(i) + "] is not a token of the step");
  // Tokens past query_start[n_seqs] are in no sequence: attention leaves
  // their rows alone (the padding of core/hal/step_padding.h).
  if (a.query_start[0] != 0 || a.query_start[a.n_seqs] > a.n_tokens)
    return invalid_argument("step: query_start must run from 0 to at most n_tokens");
  for (int32_t s = 0; s < a.n_seqs; ++s)
    if (a.query_start[s + 1] < a.query_start[s]) return invalid_argument("step: query_start is not ascending");
  // Sequence lengths, block tables and positions matter to plans that use the KV cache.
  const int32_t bs = lim.block_size;
  const int64_t max_len = (int64_t)b.max_blocks_per_seq * std::max(bs, 1);
  for (int32_t s = 0; s < a.n_seqs && bs > 0; ++s) {
    if (a.seq_lens[s] < 0 || a.seq_lens[s] > max_len)
      return invalid_argument("step: seq_lens[" + std::to_string(s) + "] = " + std::to_string(a.seq_lens[s]) +
                              " exceeds the bucket's " + std::to_string(max_len) + " positions");
    const int32_t used_blocks = (a.seq_lens[s] + bs - 1) / bs;
    for (int32_t j = 0; j < used_blocks; ++j) {
      const int32_t blk = a.block_tables[(int64_t)s * b.max_blocks_per_seq + j];
      if (blk < 0 || blk >= lim.kv_blocks)
        return invalid_argument("step: block table entry " + std::to_string(blk) + " is not a KV block");
    }
    for (int32_t t = a.query_start[s]; t < a.query_start[s + 1]; ++t)
      if (a.positions[t] < 0 || a.positions[t] >= a.seq_lens[s])
        return invalid_argument("step: position " + std::to_string(a.positions[t]) + " of token " + std::to_string(t) +
                                " is outside its sequence's length " + std::to_string(a.seq_lens[s]));
  }
  // Only a plan that writes or reads the KV cache follows the slot mapping;
  // kNoSlot (-1) writes nothing (a padding token, core/hal/step_padding.h).
  for (int32_t t = 0; t < a.n_tokens && lim.kv_slots > 0; ++t)
    if (a.slot_mapping[t] != kNoSlot && (a.slot_mapping[t] < 0 || a.slot_mapping[t] >= lim.kv_slots))
      return invalid_argument("step: slot_mapping[" + std::to_string(t) + "] = " + std::to_string(a.slot_mapping[t]) +
                              " is not a KV slot (nor -1, no slot)");
  // A folded RoPE table has a row per position up to the runner's context; none past it is read.
  for (int32_t t = 0; t < a.n_tokens && lim.rope_rows > 0; ++t)
    if (a.positions[t] < 0 || a.positions[t] >= lim.rope_rows)
      return out_of_range("step: position " + std::to_string(a.positions[t]) + " of token " + std::to_string(t) +
                          " is outside the RoPE table's " + std::to_string(lim.rope_rows) + " positions (the context it was folded for)");
  for (int32_t t = 0; t < a.n_tokens && lim.vocab >= 0; ++t)
    if (a.token_ids[t] < 0 || a.token_ids[t] >= lim.vocab)
      return out_of_range("step: token id " + std::to_string(a.token_ids[t]) + " is outside the vocabulary [0, " +
                          std::to_string(lim.vocab) + ")");
  return Status::ok();
}

}  // namespace tessera
