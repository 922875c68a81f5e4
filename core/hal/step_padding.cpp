#include "core/hal/step_padding.h"

#include <algorithm>

namespace tessera {

namespace {

void fill(std::vector<int32_t>& out, const int32_t* src, int64_t n, int64_t total, int32_t pad) {
  out.resize((size_t)total);
  if (n > 0) std::copy(src, src + n, out.begin());
  std::fill(out.begin() + n, out.end(), pad);
}

}  // namespace

StepArgs StepArrays::args() const {
  StepArgs a;
  a.token_ids = token_ids.data();
  a.positions = positions.data();
  a.slot_mapping = slot_mapping.data();
  a.n_tokens = (int32_t)token_ids.size();
  a.query_start = query_start.data();
  a.seq_lens = seq_lens.data();
  a.block_tables = block_tables.data();
  a.n_seqs = (int32_t)seq_lens.size();
  a.logit_rows = logit_rows.data();
  a.n_logit_rows = (int32_t)logit_rows.size();
  return a;
}

void pad_step(const StepArgs& a, const ShapeBucket& b, int32_t logit_rows, StepArrays& out) {
  const int64_t tokens = b.max_tokens, seqs = b.max_seqs, table = b.max_blocks_per_seq;
  fill(out.token_ids, a.token_ids, a.n_tokens, tokens, 0);
  fill(out.positions, a.positions, a.n_tokens, tokens, 0);
  fill(out.slot_mapping, a.slot_mapping, a.n_tokens, tokens, kNoSlot);
  fill(out.query_start, a.query_start, (int64_t)a.n_seqs + 1, seqs + 1, a.n_tokens);
  fill(out.seq_lens, a.seq_lens, a.n_seqs, seqs, 0);
  fill(out.block_tables, a.block_tables, (int64_t)a.n_seqs * table, seqs * table, 0);
  fill(out.logit_rows, a.logit_rows, a.n_logit_rows, std::max(logit_rows, a.n_logit_rows), 0);
}

}  // namespace tessera
