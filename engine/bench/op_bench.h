#pragma once
// One CPU primitive timed against the machine's roofs, measured in the same
// run (`tessera bench --op`, docs/performance.md): the op's call after a
// warm-up, many times, each on the next of several copies of its inputs
// whose total exceeds 4x the last-level cache (so every call reads from
// memory, as a model's step does), or on one cache-resident copy (hot).
#include <string>

#include "core/compute_roofs.h"
#include "core/parallel.h"
#include "core/status.h"
#include "engine/bench/op_table.h"

namespace tessera {

struct OpTiming {
  OpShape shape;
  OpCostFigures cost;
  bool hot = false;
  int copies = 0, reps = 0;
  double time_us = 0;  // median of reps
  double gflops() const { return time_us > 0 ? cost.flops / time_us / 1e3 : 0; }
  double gbps() const { return time_us > 0 ? cost.bytes / time_us / 1e3 : 0; }
  double intensity() const { return cost.bytes > 0 ? cost.flops / cost.bytes : 0; }
};

// Checks the shape (errors name the flag), fills the copies, times: at
// least 10 calls and until min_seconds have passed.
Expected<OpTiming> time_op(ParallelFor& pf, const OpShape& shape, bool hot, double min_seconds = 0.2, uint64_t seed = 1);

// The roofs an op is compared with, measured once per run: the streaming
// read (core/read_bandwidth.h) and every compute roof (core/compute_roofs.h).
struct MachineRoofs {
  double read_GBps = 0;
  ComputeRoof compute[3];  // indexed by ComputeDtype
  const ComputeRoof& of(ComputeDtype d) const { return compute[(int)d]; }
};

// The read roof as the CPU backend measures it at device open (the same
// probe and buffer size), so that bench and `tessera devices` agree.
MachineRoofs measure_machine_roofs(ParallelFor& pf);

}  // namespace tessera
