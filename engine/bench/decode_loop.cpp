#include "engine/bench/decode_loop.h"

#include <algorithm>
#include <chrono>

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

// The arrays of one single-token step, kept alive while it is in flight.
struct OneToken {
  int32_t token = 0, position = 0, slot = 0, row = 0, seq_len = 0;
  int32_t query_start[2] = {0, 1};
  std::vector<int32_t> block_table;
  std::vector<BlockCopy> copies;
  StepRequest request(StepOutputs outputs) const {
    StepRequest r;
    r.args.token_ids = &token;
    r.args.positions = &position;
    r.args.slot_mapping = &slot;
    r.args.n_tokens = 1;
    r.args.query_start = query_start;
    r.args.seq_lens = &seq_len;
    r.args.block_tables = block_table.data();
    r.args.n_seqs = 1;
    r.args.logit_rows = &row;
    r.args.n_logit_rows = 1;
    r.block_copies = copies;
    r.outputs = outputs;
    return r;
  }
};

// Reserves position `pos` of the sequence and fills the step's arrays but the token.
Status prepare(BlockManager& bm, SeqId id, int32_t pos, int32_t blocks_per_seq, OneToken& s) {
  s.copies.clear();
  TS_TRY(bm.reserve(id, pos + 1, &s.copies));
  s.position = pos;
  s.slot = bm.slot(id, pos);
  s.seq_len = pos + 1;
  const auto table = bm.block_table(id);
  s.block_table.assign((size_t)blocks_per_seq, 0);
  std::copy(table.begin(), table.end(), s.block_table.begin());
  return Status::ok();
}

int32_t host_argmax(std::span<const float> x) { return (int32_t)(std::max_element(x.begin(), x.end()) - x.begin()); }

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

Expected<DecodeTimes> run_decode_loop(ModelRunner& runner, KvCache& kv, const DecodeLoop& loop) {
  if (loop.overlapped && !runner.samples_on_device())
    return invalid_argument("bench: the overlapped loop needs a runner that samples on the device");
  BlockManager& bm = kv.blocks();
  static SeqId next_id = SeqId{1} << 40;  // out of the sessions' way
  const SeqId id = next_id++;
  TS_TRY(bm.fork(loop.parent, id));
  struct Release {
    BlockManager& bm;
    SeqId id;
    ~Release() { bm.release(id); }
  } release{bm, id};

  DecodeTimes t;
  OneToken steps[2];
  const StepOutputs outputs = loop.overlapped ? StepOutputs::tokens : StepOutputs::logits;
  int32_t token = loop.first;
  TS_TRY(prepare(bm, id, loop.prefix, runner.max_blocks_per_seq(), steps[0]));
  Clock::time_point known = Clock::now();
  for (int32_t i = 0; i < loop.steps; ++i) {
    OneToken& cur = steps[i % 2];
    cur.token = token;
    const Clock::time_point start = Clock::now();
    if (i > 0) t.gap_us.push_back(ms(known, start) * 1e3);
    TS_ASSIGN_OR_RETURN(const StepTicket ticket, runner.submit(cur.request(outputs)));
    // While the step runs: the next step's slot and arrays (the overlapped loop only).
    const bool more = i + 1 < loop.steps;
    if (loop.overlapped && more) TS_TRY(prepare(bm, id, loop.prefix + i + 1, runner.max_blocks_per_seq(), steps[(i + 1) % 2]));
    TS_ASSIGN_OR_RETURN(const StepResult r, runner.collect(ticket));
    known = Clock::now();
    t.step_ms.push_back(ms(start, known));
    token = loop.overlapped ? r.tokens[0] : host_argmax(r.logits);
    t.ids.push_back(token);
    if (!loop.overlapped && more) TS_TRY(prepare(bm, id, loop.prefix + i + 1, runner.max_blocks_per_seq(), steps[(i + 1) % 2]));
  }
  return t;
}

}  // namespace tessera
