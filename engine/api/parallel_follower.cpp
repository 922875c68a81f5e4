// A follower rank of a tensor-parallel run (engine/dist/parallel.h): rank
// 0's runners, opened here the same way, and their steps, until it leaves.
#include <cstdio>

#include "backends/mpi/mpi_world.h"
#include "engine/api/model_impl.h"
#include "engine/dist/parallel.h"
#include "engine/runtime/model_runner.h"

namespace tessera {

int launched_rank() { return mpi::launched_rank(); }

void abort_ranks(int code) { mpi::abort_world(code); }

namespace {

// One runner: opened as the leader's was, then its steps until it closes.
// A step the leader's runner refuses is refused here too; both go on.
Status follow_runner(const RunnerOptions& o, HostGroup& group) {
  TS_ASSIGN_OR_RETURN(ModelWeights w, open_weights(o.parallel.model_path));
  TS_ASSIGN_OR_RETURN(RunnerWithCache rc, open_runner(std::make_shared<const ModelWeights>(std::move(w)), o));
  for (;;) {
    TS_ASSIGN_OR_RETURN(ControlMessage m, receive_control(group));
    if (m.kind == ControlKind::close) return Status::ok();
    if (m.kind != ControlKind::step)
      return internal_error("tensor parallel: rank 0 sent a control message of kind " + std::to_string((int)m.kind) + " inside a runner");
    TS_ASSIGN_OR_RETURN(StepWire step, decode_step(m.payload, rc.runner->max_blocks_per_seq()));
    StepRequest req{step.args(), step.block_copies, (StepOutputs)step.outputs};
    auto ticket = rc.runner->submit(req);
    if (ticket) (void)rc.runner->collect(*ticket);
  }
}

}  // namespace

Status follow_rank0() {
  Parallelism world;
  world.tensor = mpi::launched_size();  // the group only: each runner's split comes with its open message
  TS_ASSIGN_OR_RETURN(ResolvedGroup g, resolve_group(world));
  return follow_leader(g);
}

Status follow_leader(const ResolvedGroup& g) {
  for (;;) {
    TS_ASSIGN_OR_RETURN(ControlMessage m, receive_control(*g.group));
    if (m.kind == ControlKind::leave) return Status::ok();
    if (m.kind != ControlKind::open)
      return internal_error("tensor parallel: rank 0 sent a control message of kind " + std::to_string((int)m.kind) + " outside a runner");
    TS_ASSIGN_OR_RETURN(RunnerOptions o, decode_open(m.payload));
    o.parallel.group = g.group;
    o.parallel.host_comm = g.host_comm;
    TS_TRY(follow_runner(o, *g.group).with_context("rank " + std::to_string(g.group->rank())));
  }
}

}  // namespace tessera
