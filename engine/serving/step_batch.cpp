#include "engine/serving/step_batch.h"

#include <algorithm>

namespace tessera {

void StepBatch::build(const SchedulerOutput& out, const BlockManager& blocks, int32_t max_blocks_per_seq) {
  const size_t n_seqs = out.seqs.size();
  tokens_.clear();
  positions_.clear();
  slots_.clear();
  logit_rows_.clear();
  query_start_.assign(1, 0);
  seq_lens_.clear();
  block_tables_.assign(n_seqs * (size_t)max_blocks_per_seq, 0);
  for (size_t i = 0; i < n_seqs; ++i) {
    const ScheduledSeq& e = out.seqs[i];
    const Sequence& s = *e.seq;
    for (int32_t p = e.start; p < e.start + e.n_tokens; ++p) {
      tokens_.push_back(e.token_at(p));
      positions_.push_back(p);
      slots_.push_back(blocks.slot(s.id, p));
    }
    query_start_.push_back((int32_t)tokens_.size());
    seq_lens_.push_back(e.start + e.n_tokens);
    const auto table = blocks.block_table(s.id);
    std::copy(table.begin(), table.end(), block_tables_.begin() + (ptrdiff_t)(i * (size_t)max_blocks_per_seq));
    if (e.samples) {
      for (int32_t r = e.rows; r >= 1; --r) logit_rows_.push_back((int32_t)tokens_.size() - r);
    }
  }
  args_ = StepArgs{};
  args_.token_ids = tokens_.data();
  args_.positions = positions_.data();
  args_.slot_mapping = slots_.data();
  args_.n_tokens = (int32_t)tokens_.size();
  args_.query_start = query_start_.data();
  args_.seq_lens = seq_lens_.data();
  args_.block_tables = block_tables_.data();
  args_.n_seqs = (int32_t)n_seqs;
  args_.logit_rows = logit_rows_.data();
  args_.n_logit_rows = (int32_t)logit_rows_.size();
}

}  // namespace tessera
