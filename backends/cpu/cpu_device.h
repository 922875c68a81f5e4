#pragma once
#include <memory>

#include "backends/cpu/cpu_kernel_table.h"
#include "core/hal/backend.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

// The host as a device. Memory is host memory (host_staging too), streams
// run work on call (backends/cpu/cpu_stream.h),
// and one thread pool (TESSERA_THREADS, default: every hardware thread) runs
// all kernels.
class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int threads);
  const DeviceInfo& info() const override { return info_; }
  const KernelTable& kernels() const override { return table_; }
  Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes, MemoryUse use) override;
  Expected<std::unique_ptr<Buffer>> import_weights(std::span<const std::byte> bytes) override;
  Expected<std::unique_ptr<Stream>> create_stream() override;
  Expected<std::unique_ptr<Event>> create_event() override;
  Expected<std::unique_ptr<Executable>> compile(const Plan& plan, std::span<Buffer* const> bound) override;
  Expected<uint64_t> free_memory() const override;  // MemAvailable (backends/cpu/cpu_info.h)
  // MPI's, made by the caller (engine/dist): the CPU backend links no communication library.
  Status use_communicator(std::shared_ptr<Communicator> comm) override;

 private:
  ThreadPool pool_;
  std::shared_ptr<Communicator> comm_;  // for the plans' all_reduce and all_gather nodes; may be null
  DeviceInfo info_;
  CpuKernelTable table_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::vector<DeviceInfo> enumerate() override;
  Expected<std::unique_ptr<Device>> open(int index) override;
};

// Threads the CPU backend uses: $TESSERA_THREADS, else every hardware thread.
int default_cpu_threads();

}  // namespace tessera::cpu
