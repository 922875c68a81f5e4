#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/hal/buffer.h"
#include "core/hal/communicator.h"
#include "core/hal/device_info.h"
#include "core/hal/kernel_table.h"
#include "core/hal/plan.h"
#include "core/hal/stream.h"
#include "core/status.h"

namespace tessera {

// A rate a device measured by running one instruction and nothing else.
struct MeasuredRate {
  double GFLOPs = 0;  // a multiply-add counted as 2
  std::string what;   // the instruction: "mma.sync m16n8k16 f16, f32 sums"
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual const KernelTable& kernels() const = 0;
  virtual Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes, MemoryUse use) = 0;
  // Weights: a device whose memory is the host's may keep `bytes` in place
  // (the caller keeps them alive as long as the buffer); others copy.
  virtual Expected<std::unique_ptr<Buffer>> import_weights(std::span<const std::byte> bytes) = 0;
  virtual Expected<std::unique_ptr<Stream>> create_stream() = 0;
  // An event any stream of this device records (and any stream may wait on).
  virtual Expected<std::unique_ptr<Event>> create_event() = 0;
  // `bound[i]` is the buffer for plan buffer i of role weight, kv_pool or
  // transfer (null for the roles compile allocates itself). An arena may be
  // bound too, at least its planned size: plans that never run at once (the
  // buckets of one runner, whose steps one stream orders) share one; null
  // makes compile allocate the plan's own.
  virtual Expected<std::unique_ptr<Executable>> compile(const Plan& plan, std::span<Buffer* const> bound) = 0;
  // Bytes of device memory free for allocation now (not reserved by this or
  // other processes), by the backend's best measure (docs/backends.md says
  // which); a backend that cannot tell says so.
  virtual Expected<uint64_t> free_memory() const {
    return unsupported(info().backend + ": this backend does not report free memory");
  }
  // The communicator this device's plans call for their all_reduce and
  // all_gather nodes (tensor parallelism), given before compile. A backend
  // that has none refuses, and placement puts those nodes on the CPU.
  virtual Status use_communicator(std::shared_ptr<Communicator> comm) {
    (void)comm;
    return unsupported(info().backend + ": this backend runs no collectives (all_reduce, all_gather)");
  }
  // The backend's own communicator over the ranks `group` spans, one device
  // per rank (NCCL on CUDA, RCCL on ROCm), bootstrapped through the group.
  // The CPU's is MPI's, which the caller makes (engine/dist).
  virtual Expected<std::shared_ptr<Communicator>> create_communicator(HostGroup& group) {
    (void)group;
    return unsupported(info().backend + ": this backend has no communicator of its own");
  }
  // The dense rate of the matrix instruction the device's prefill GEMM uses,
  // measured now (tens of milliseconds; `tessera bench` asks for it).
  virtual Expected<MeasuredRate> measure_matrix_rate() {
    return unsupported(info().backend + ": this backend has no matrix-rate probe");
  }
};

}  // namespace tessera
