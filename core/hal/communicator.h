#pragma once
// The ranks that run one model together (tensor or pipeline parallelism,
// docs/parallelism.md), as the collectives a step's graph calls. Each backend
// brings its own: MPI for the CPU (backends/mpi), NCCL for CUDA and RCCL for
// ROCm (inside their plugins). A Device is given one (Device::use_communicator)
// before its plans are compiled; the all_reduce and all_gather nodes of a
// plan call it from the stream that runs the step, in graph order, so every
// rank issues the same collectives in the same order.
//
// Buffers are the device's memory (host memory for the CPU). `stream` is the
// stream the step runs on (null: the caller waits), so a GPU collective is
// queued in stream order rather than waited for on the host.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace tessera {

class Stream;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi", "nccl", "rccl", "threads" (the in-process group the tests use).
  virtual std::string name() const = 0;
  // In place: `count` elements of `data` become their sum over every rank.
  virtual Status all_reduce_sum(void* data, size_t count, DType dtype, Stream* stream) = 0;
  // Rank r's `counts[r]` elements (`send`) land at sum(counts[0..r)) of
  // `recv`, on every rank.
  virtual Status all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype, Stream* stream) = 0;
  // Point to point, between two ranks that both call: the pipeline's
  // activations. Blocks until `data` may be reused (send) or is filled (recv).
  virtual Status send(const void* data, size_t bytes, int peer, Stream* stream) = 0;
  virtual Status recv(void* data, size_t bytes, int peer, Stream* stream) = 0;
  // A receive posted now and completed by wait_recv, so the peer's send
  // never waits for this rank to get there: a pipeline's first stage posts
  // the logits of every micro-batch of a step before it runs any of them.
  // Host memory; handles are this communicator's, used once.
  virtual Expected<uint64_t> post_recv(void* data, size_t bytes, int peer) {
    (void)data, (void)bytes, (void)peer;
    return unsupported(name() + ": no posted receives");
  }
  virtual Status wait_recv(uint64_t handle) {
    (void)handle;
    return unsupported(name() + ": no posted receives");
  }
};

// The host-side channel the ranks share before any device is open: the
// control path (step metadata from rank 0, agreeing on sizes) and the
// bootstrap a GPU communicator needs (NCCL's unique id, broadcast from rank 0).
class HostGroup {
 public:
  virtual ~HostGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // `bytes` of `root` arrive in every rank's `bytes` (same size everywhere).
  virtual Status broadcast(std::span<std::byte> bytes, int root) = 0;
  // The minimum of `value` over the ranks, on every rank.
  virtual Expected<int64_t> min(int64_t value) = 0;
  // The control channel (engine/dist/parallel.cpp): `message` goes from this
  // rank to every other, and the call returns without waiting for any of
  // them to take it (the group keeps its own copy), so a pipeline's first
  // stage starts its next micro-batch while the later stages still run the
  // last. A broadcast would hold the sender until every rank joined it.
  virtual Status send_to_all(std::span<const std::byte> message) = 0;
  // The next message `from` sent with send_to_all, in the order sent; waits
  // for one. `message` is resized to it.
  virtual Status receive_from(int from, std::vector<std::byte>& message) = 0;
};

}  // namespace tessera
