#pragma once
// The ranks mpirun started, as the HAL's HostGroup (the control channel:
// step metadata from rank 0, sizes agreed) and Communicator (the CPU's
// collectives, the all_reduce and all_gather nodes of a tensor-parallel
// graph). The process joins once, on the first call (MPI_Init_thread,
// asking for MPI_THREAD_MULTIPLE: the engine's step thread and the main
// thread both talk), and leaves at exit. Each of the two gets its own
// duplicate of MPI_COMM_WORLD, so a broadcast of step metadata never
// matches a collective of the step.
#include <memory>

#include "core/hal/communicator.h"
#include "core/status.h"

namespace tessera::mpi {

struct MpiWorld {
  std::shared_ptr<HostGroup> group;
  std::shared_ptr<Communicator> comm;
};

// Whether this build has MPI (Open MPI's, from Debian's libopenmpi-dev).
bool available();
// What mpirun's environment says, before MPI is initialised: the world's
// size (1 when this process was not started by mpirun) and this rank.
int launched_size();
int launched_rank();
// Joins the world (once; later calls return the same objects).
Expected<MpiWorld> join_world();
// Runs `fn` when the process leaves the world (before MPI_Finalize, at exit):
// rank 0 tells the other ranks to stop.
void at_leave(void (*fn)());
// Ends every rank of the world with `code` (MPI_Abort), where this process
// joined it: a rank that fails must not leave the others waiting for it.
void abort_world(int code);

}  // namespace tessera::mpi
