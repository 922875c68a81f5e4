#include "backends/cuda/gpu_device.h"

#include "backends/cuda/gpu_buffer.h"
#include "backends/cuda/gpu_executable.h"
#include "backends/cuda/gpu_nccl.h"
#include "backends/cuda/gpu_status.h"
#include "backends/cuda/gpu_stream.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu {

Expected<std::unique_ptr<Buffer>> GpuDevice::allocate(uint64_t bytes, MemoryUse use) {
  TS_ASSIGN_OR_RETURN(auto b, GpuBuffer::create(ctx_, bytes, use));
  return std::unique_ptr<Buffer>(std::move(b));
}

Expected<std::unique_ptr<Buffer>> GpuDevice::import_weights(std::span<const std::byte> bytes) {
  TS_ASSIGN_OR_RETURN(auto b, GpuBuffer::create(ctx_, bytes.size(), MemoryUse::weights));
  TS_ASSIGN_OR_RETURN(auto s, GpuStream::create(ctx_));
  TS_TRY(s->upload(*b, 0, bytes));
  TS_TRY(s->synchronize());
  return std::unique_ptr<Buffer>(std::move(b));
}

Expected<std::unique_ptr<Stream>> GpuDevice::create_stream() {
  TS_ASSIGN_OR_RETURN(auto s, GpuStream::create(ctx_));
  return std::unique_ptr<Stream>(std::move(s));
}

Expected<std::unique_ptr<Event>> GpuDevice::create_event() {
  TS_ASSIGN_OR_RETURN(auto e, GpuEvent::create(ctx_));
  return std::unique_ptr<Event>(std::move(e));
}

Expected<std::unique_ptr<Executable>> GpuDevice::compile(const Plan& plan, std::span<Buffer* const> bound) {
  TS_ASSIGN_OR_RETURN(auto exe, GpuExecutable::create(ctx_, plan, bound, comm_));
  return std::unique_ptr<Executable>(std::move(exe));
}

Status GpuDevice::use_communicator(std::shared_ptr<Communicator> comm) {
  if (!comm) {
    comm_.reset();
    table_ = GpuKernelTable();
    return Status::ok();
  }
  auto ours = std::dynamic_pointer_cast<GpuCommunicator>(comm);
  if (!ours)
    return invalid_argument(std::string(TESSERA_GPU_BACKEND ":") + std::to_string(info().index) + ": use_communicator: a '" +
                            comm->name() + "' communicator cannot reach this device's memory; give it the one its "
                            "create_communicator makes (" TESSERA_GPU_COLLECTIVES ")");
  if (ours->context().ordinal() != ctx_->ordinal())
    return invalid_argument(std::string(TESSERA_GPU_BACKEND ":") + std::to_string(info().index) +
                            ": use_communicator: the communicator was made for another device");
  comm_ = std::move(ours);
  table_ = GpuKernelTable(comm_->name());
  return Status::ok();
}

Expected<std::shared_ptr<Communicator>> GpuDevice::create_communicator(HostGroup& group) {
  TS_ASSIGN_OR_RETURN(auto comm, GpuCommunicator::create(ctx_, group));
  return std::shared_ptr<Communicator>(std::move(comm));
}

Expected<uint64_t> GpuDevice::free_memory() const {
  TS_TRY(ctx_->make_current());
  size_t free_bytes = 0, total = 0;
  TS_GPU_TRY(gpuMemGetInfo(&free_bytes, &total));
  return (uint64_t)free_bytes;
}

Expected<MeasuredRate> GpuDevice::measure_matrix_rate() {
  TS_TRY(ctx_->make_current());
  gpuStream_t s = nullptr;
  TS_GPU_TRY(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  kernels::MatrixRate r;
  const gpuError_t e = kernels::measure_matrix_rate(r, s);
  (void)gpuStreamDestroy(s);
  if (e != gpuSuccess) return gpu_failed("the matrix-rate probe (kernels/cuda/matrix_rate.cu)", e);
  return MeasuredRate{r.gflops, r.what};
}

void GpuBackend::probe() const {
  if (probed_) return;
  probed_ = true;
  int count = 0;
  const gpuError_t e = gpuGetDeviceCount(&count);
  if (e != gpuSuccess) {
    // CUDA without a driver answers cudaErrorInsufficientDriver (35) and
    // leaves the count alone; HIP without a GPU answers hipErrorNoDevice.
    why_none_ = gpu_call_name("gpuGetDeviceCount") + " failed: " + gpu_error_text(e) +
#if defined(TESSERA_GPU_HIP)
                " (no AMD GPU, or no amdgpu kernel driver, on this machine)";
#else
                " (no NVIDIA GPU or driver on this machine, or a driver older than this build's CUDA runtime)";
#endif
    return;
  }
  for (int i = 0; i < count; ++i) {
    gpuDeviceProp_t p{};
    const gpuError_t pe = gpuGetDeviceProperties(&p, i);
    if (pe != gpuSuccess) {
      why_none_ += (why_none_.empty() ? "" : "; ") + gpu_call_name("gpuGetDeviceProperties") + "(" + std::to_string(i) +
                   ") failed: " + gpu_error_text(pe);
      continue;
    }
    devices_.push_back(describe(i, p));
    devices_.back().index = (int)devices_.size() - 1;
    ordinals_.push_back(i);
  }
  if (count == 0) why_none_ = std::string(TESSERA_GPU_API) + "GetDeviceCount found no device";
}

std::vector<DeviceInfo> GpuBackend::enumerate() {
  std::lock_guard<std::mutex> lock(mutex_);
  probe();
  return devices_;
}

std::string GpuBackend::why_none() const {
  std::lock_guard<std::mutex> lock(mutex_);
  probe();
  return devices_.empty() ? why_none_ : std::string();
}

Expected<std::unique_ptr<Device>> GpuBackend::open(int index) {
  std::lock_guard<std::mutex> lock(mutex_);
  probe();
  if (index < 0 || (size_t)index >= devices_.size())
    return devices_.empty() ? not_found(std::string(TESSERA_GPU_BACKEND " backend: no device (") + why_none_ + ")")
                            : not_found(std::string(TESSERA_GPU_BACKEND " backend: device ") + std::to_string(index) +
                                        " does not exist (" + std::to_string(devices_.size()) + " found)");
  std::shared_ptr<GpuContext> ctx = contexts_[index].lock();
  if (!ctx) {
    TS_ASSIGN_OR_RETURN(ctx, GpuContext::open(ordinals_[(size_t)index], devices_[(size_t)index]));
    contexts_[index] = ctx;
  }
  return std::unique_ptr<Device>(new GpuDevice(ctx));
}

}  // namespace tessera::gpu
