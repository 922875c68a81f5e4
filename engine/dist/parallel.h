#pragma once
// A runner split over the ranks of a tensor-parallel group
// (docs/parallelism.md). Rank 0, the leader, runs everything a single
// process does (the scheduler, the sampler, the API) and tells the other
// ranks, the followers, what to do: open a runner like its own, run each
// step it runs (the step's arrays and block copies), close the runner, and
// leave. Every rank then runs the same plans on its part of the weights and
// KV, the collectives in the plans exchanging what the split needs.
//
// The control messages go over the HostGroup (MPI), a fixed header first,
// then its payload.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/hal/block_copy.h"
#include "core/hal/communicator.h"
#include "core/hal/plan.h"
#include "core/status.h"

namespace tessera {

struct RunnerOptions;
struct StepRequest;

// The ranks a runner is split over, and what it runs its collectives with.
// One kind at a time: tensor parallelism (each rank a share of every
// layer) or pipeline parallelism (each rank a stage: a range of the layers).
struct Parallelism {
  int32_t tensor = 1;       // --tensor-parallel: 1, none
  int32_t pipeline = 1;     // --pipeline-parallel: 1, none
  std::string model_path;   // what the followers open: the leader's -m (a file, a folder or synthetic:TYPE)
  // Null: the world mpirun started (engine/dist/parallel.cpp); the tests give
  // an in-process group of threads.
  std::shared_ptr<HostGroup> group;
  std::shared_ptr<Communicator> host_comm;  // the CPU's collectives (MPI's); null with group null
  int32_t ranks() const { return tensor * pipeline; }
  // "--tensor-parallel 2", for messages.
  std::string flag() const;
};

// The group and the CPU's communicator of a run over `size` ranks: the
// given ones, or the world mpirun started, checked to have `size` ranks.
struct ResolvedGroup {
  std::shared_ptr<HostGroup> group;
  std::shared_ptr<Communicator> host_comm;
};
Expected<ResolvedGroup> resolve_group(const Parallelism& tp);

enum class ControlKind : uint32_t { open = 1, step = 2, close = 3, leave = 4 };

// What the leader sends; a follower receives the same.
struct ControlMessage {
  ControlKind kind = ControlKind::leave;
  std::vector<std::byte> payload;
};
Status send_control(HostGroup& g, ControlKind kind, std::span<const std::byte> payload = {});
Expected<ControlMessage> receive_control(HostGroup& g);

// open: the runner's options and the model to load.
std::vector<std::byte> encode_open(const RunnerOptions& o);
Expected<RunnerOptions> decode_open(std::span<const std::byte> payload);

// step: the step's arrays (block tables `stride` apart) and block copies.
struct StepWire {
  std::vector<int32_t> token_ids, positions, slot_mapping, query_start, seq_lens, block_tables, logit_rows;
  std::vector<BlockCopy> block_copies;
  int32_t outputs = 1;
  StepArgs args() const;
};
void encode_step(const StepArgs& a, int32_t stride, std::span<const BlockCopy> copies, int32_t outputs, std::vector<std::byte>& out);
Expected<StepWire> decode_step(std::span<const std::byte> payload, int32_t stride);

}  // namespace tessera
