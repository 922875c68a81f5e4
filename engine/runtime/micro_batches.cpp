// A pipeline's first stage (--pipeline-parallel): each step cut into
// micro-batches of its tokens and run through this stage one after another,
// each told to the later stages as it goes (docs/parallelism.md).
#include <algorithm>
#include <cmath>

#include "engine/dist/parallel.h"
#include "engine/runtime/model_runner.h"

namespace tessera {

// The pipeline's first stage: the step cut into micro-batches of its
// tokens, each sent to the other stages and run through this stage in turn,
// so stage 2 can work on the first while this one works on the second.
// The last stage's logits of every micro-batch are posted for before any
// runs, so its sends never wait on this rank (collect waits for them).
Status ModelRunner::submit_micro_batches(const StepRequest& request, InFlight& f) {
  const StepArgs& args = request.args;
  const int pieces = split_micro_batches(args, options_.parallel.pipeline);
  const size_t vocab = (size_t)config().vocab_size;
  const int last = tp_.group->size() - 1;
  f.posted.clear();
  size_t row = 0;
  for (int m = 0; m < pieces; ++m) {
    const StepArgs& mb = micro_[(size_t)m].args;
    float* at = reinterpret_cast<float*>(f.logits->host_data()) + row * vocab;
    TS_ASSIGN_OR_RETURN(const uint64_t handle, tp_.host_comm->post_recv(at, (size_t)mb.n_logit_rows * vocab * sizeof(float), last));
    f.posted.push_back(handle);
    row += (size_t)mb.n_logit_rows;
  }
  for (int m = 0; m < pieces; ++m) {
    const StepArgs& mb = micro_[(size_t)m].args;
    const std::span<const BlockCopy> copies = m == 0 ? request.block_copies : std::span<const BlockCopy>{};
    encode_step(mb, max_blocks_per_seq_, copies, (int32_t)request.outputs, step_wire_);
    TS_TRY(send_control(*tp_.group, ControlKind::step, step_wire_));
    TS_TRY(queue_step(mb, copies).status());
  }
  return Status::ok();
}

// Contiguous runs of the step's tokens, as even as integers allow, at most
// `pieces` of them. A sequence may be cut between two: its first tokens in
// one micro-batch (its context there ending at the cut), the rest in the
// next, whose attention reads the first part's K/V, written on every stage
// just before (each stage runs the micro-batches in order). So one long
// prompt chunk overlaps across stages too. One piece where the logit rows are
// not in token order (they would not come back in the step's order).
int ModelRunner::split_micro_batches(const StepArgs& a, int pieces) {
  bool ordered = true;
  for (int32_t i = 1; i < a.n_logit_rows; ++i) ordered &= a.logit_rows[i] > a.logit_rows[i - 1];
  if (min_micro_batch_tokens_ == 0) min_micro_batch_tokens_ = min_micro_batch_tokens();
  pieces = ordered && a.n_seqs > 0 ? std::max(1, std::min(pieces, a.n_tokens / min_micro_batch_tokens_)) : 1;
  if (micro_.size() < (size_t)pieces) micro_.resize((size_t)pieces);
  int32_t next_logit = 0, seq = 0;
  for (int m = 0; m < pieces; ++m) {
    MicroBatch& mb = micro_[(size_t)m];
    StepArrays& arr = mb.arrays;
    const ShardRange toks = shard_range(std::max(a.n_tokens, 0), pieces, m);
    const int32_t t0 = (int32_t)toks.begin, t1 = (int32_t)toks.end;
    arr.token_ids.assign(a.token_ids + t0, a.token_ids + t1);
    arr.positions.assign(a.positions + t0, a.positions + t1);
    arr.slot_mapping.assign(a.slot_mapping + t0, a.slot_mapping + t1);
    arr.query_start.assign(1, 0);
    arr.seq_lens.clear();
    arr.block_tables.clear();
    // Every sequence with tokens in [t0, t1), the one cut at t0 included.
    while (seq < a.n_seqs && a.query_start[seq + 1] <= t0) ++seq;
    for (int32_t j = seq; j < a.n_seqs && a.query_start[j] < t1; ++j) {
      const int32_t end = std::min(a.query_start[j + 1], t1);
      if (end <= std::max(a.query_start[j], t0)) continue;  // a sequence with no tokens in this step
      arr.query_start.push_back(end - t0);
      arr.seq_lens.push_back(a.seq_lens[j] - (a.query_start[j + 1] - end));  // its context ends at the cut
      arr.block_tables.insert(arr.block_tables.end(), a.block_tables + (size_t)j * max_blocks_per_seq_,
                              a.block_tables + (size_t)(j + 1) * max_blocks_per_seq_);
    }
    arr.logit_rows.clear();
    while (next_logit < a.n_logit_rows && a.logit_rows[next_logit] < t1) arr.logit_rows.push_back(a.logit_rows[next_logit++] - t0);
    if (m == pieces - 1)  // rows past the last sequence's tokens: the step checks refuse them, as they would the whole step
      while (next_logit < a.n_logit_rows) arr.logit_rows.push_back(a.logit_rows[next_logit++] - t0);
    mb.args = arr.args();
  }
  micro_batches_ += pieces;
  return pieces;
}

// A micro-batch pays only where a stage's step is bound by computing, not by
// reading its weights: each piece reads the stage's weights again, so a
// decode step of a few tokens cut in two reads them twice for the same work
// (4 sequences on synthetic:q8_0 over 2 stages: 150-175 ms a step cut in
// two, against 95 ms in one process; docs/performance.md). The piece must
// hold at least the device's ridge point in tokens: its op rate over its
// read bandwidth, times the weights' bytes per parameter, over the 2 ops of
// a multiply-add; at least kFloor where the roofs are not known or put it
// lower. Only datasheet or nominal roofs count: a roof measured at open moves
// with the machine's load, and the same step must cut the same way each run.
int32_t ModelRunner::min_micro_batch_tokens() const {
  constexpr int32_t kFloor = 16;
  uint64_t bytes = 0, params = 0;
  bool quantized = false;
  for (const graph::Node& n : graph_.nodes) {
    if (!is_matmul_family(n.op)) continue;
    const TensorDesc& w = graph_.value(n.inputs[1]).desc;
    bytes += w.bytes();
    params += (uint64_t)w.shape.numel();
    quantized |= traits(w.dtype).block_elems > 1;
  }
  const Roofs& r = device_info().roofs;
  const double ops = quantized ? r.int8_GOPs : std::max(r.f32_GFLOPs, r.bf16_GFLOPs);
  const bool stable = r.source == RoofSource::datasheet || r.source == RoofSource::nominal;
  if (!stable || params == 0 || ops <= 0 || r.read_GBps <= 0) return kFloor;
  const double ridge = ops * ((double)bytes / (double)params) / (2.0 * r.read_GBps);
  return std::max(kFloor, (int32_t)std::ceil(ridge));
}

}  // namespace tessera
