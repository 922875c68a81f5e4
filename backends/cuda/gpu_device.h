#pragma once
// The HAL's Device and Backend for CUDA (libtessera-backend-cuda.so) and
// ROCm (libtessera-backend-rocm.so): one source, compiled against either
// runtime through kernels/cuda/gpu_runtime.h.
#include <map>
#include <memory>
#include <mutex>

#include "backends/cuda/gpu_communicator.h"
#include "backends/cuda/gpu_context.h"
#include "backends/cuda/gpu_kernel_table.h"
#include "core/hal/backend.h"
#include "core/hal/device.h"

namespace tessera::gpu {

class GpuDevice final : public Device {
 public:
  explicit GpuDevice(std::shared_ptr<GpuContext> ctx) : ctx_(std::move(ctx)) {}
  const DeviceInfo& info() const override { return ctx_->info(); }
  const KernelTable& kernels() const override { return table_; }
  Expected<std::unique_ptr<Buffer>> allocate(uint64_t bytes, MemoryUse use) override;
  Expected<std::unique_ptr<Buffer>> import_weights(std::span<const std::byte> bytes) override;
  Expected<std::unique_ptr<Stream>> create_stream() override;
  Expected<std::unique_ptr<Event>> create_event() override;
  Expected<std::unique_ptr<Executable>> compile(const Plan& plan, std::span<Buffer* const> bound) override;
  Expected<uint64_t> free_memory() const override;
  Expected<MeasuredRate> measure_matrix_rate() override;
  // Only a GpuCommunicator of this device (create_communicator's): the
  // plans' collectives read and write device memory on the step's stream.
  // Null takes the communicator away (plans compiled after refuse collectives).
  Status use_communicator(std::shared_ptr<Communicator> comm) override;
  Expected<std::shared_ptr<Communicator>> create_communicator(HostGroup& group) override;

 private:
  std::shared_ptr<GpuContext> ctx_;
  GpuKernelTable table_;
  std::shared_ptr<GpuCommunicator> comm_;  // for the plans' all_reduce and all_gather; may be null
};

class GpuBackend final : public Backend {
 public:
  std::string name() const override { return TESSERA_GPU_BACKEND; }
  std::vector<DeviceInfo> enumerate() override;
  std::string why_none() const override;
  Expected<std::unique_ptr<Device>> open(int index) override;

 private:
  void probe() const;  // once: the runtime's device count and each device's properties
  mutable std::mutex mutex_;
  mutable bool probed_ = false;
  mutable std::vector<DeviceInfo> devices_;
  mutable std::vector<int> ordinals_;  // each listed device's runtime ordinal (unreadable ones are skipped)
  mutable std::string why_none_;
  std::map<int, std::weak_ptr<GpuContext>> contexts_;
};

}  // namespace tessera::gpu
