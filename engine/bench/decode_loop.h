#pragma once
// One sequence decoded step by step straight through ModelRunner::submit /
// collect, two ways, so tessera bench can put them side by side in one run:
//   serial: today's loop — wait for the step, download its logits, choose the
//           next token on the host, then build and submit the next step;
//   overlapped: the step samples greedily on the device; while it runs, the
//           host reserves the next position's KV slot and fills the next
//           step's arrays, and after collect only the token id goes in.
// Per step it records the wall time and the host gap: from the moment the
// host knows step N finished (collect returns) to the moment step N+1 is
// handed to the device (submit is called).
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/kv/block_manager.h"
#include "engine/runtime/model_runner.h"

namespace tessera {

struct DecodeTimes {
  std::vector<double> step_ms;  // per decode step, submit to collected
  std::vector<double> gap_us;   // host time between two steps
  std::vector<int32_t> ids;     // the greedy tokens, for checking the two loops agree
};

// Decodes `steps` greedy tokens after `parent`'s context (a sequence already
// in the cache holding `prefix` tokens whose last token is `first`), in a
// fork of it that is released before returning.
struct DecodeLoop {
  SeqId parent = 0;
  int32_t prefix = 0;
  int32_t first = 0;
  int32_t steps = 0;
  bool overlapped = false;
};
Expected<DecodeTimes> run_decode_loop(ModelRunner& runner, KvCache& kv, const DecodeLoop& loop);

}  // namespace tessera
