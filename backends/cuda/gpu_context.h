#pragma once
// One opened GPU: its index in the runtime, what it is, the stream the
// allocator orders its allocations and frees on, and the archs this build
// has kernels for. Shared (shared_ptr) by the device, its buffers and its
// streams, so that none outlives the context it allocates from.
#include <memory>
#include <string>
#include <vector>

#include "core/hal/device_info.h"
#include "core/status.h"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

// The targets this plugin was compiled for ("sm_80", "gfx90a", ...).
std::vector<std::string> built_targets();

// The DeviceInfo of runtime device `ordinal` from its properties.
DeviceInfo describe(int ordinal, const gpuDeviceProp_t& p);

// Whether kernels built for `built` run on a device of arch `device`: CUDA
// SASS runs on the same major with an equal or later minor; AMD code objects
// only on their own gfx target.
bool arch_runs(const std::string& built, const std::string& device);

class GpuContext {
 public:
  // Selects the device, checks that this build has kernels for its arch, and
  // makes the allocation stream and the stream-ordered pool (memory freed to
  // it stays cached for the next allocation instead of going back to the driver).
  static Expected<std::shared_ptr<GpuContext>> open(int ordinal, const DeviceInfo& info);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int ordinal() const { return ordinal_; }
  const DeviceInfo& info() const { return info_; }
  // Makes this device current on the calling thread (the runtime's current
  // device is per thread; every entry point that calls the runtime does this).
  Status make_current() const;
  gpuStream_t alloc_stream() const { return alloc_stream_; }

 private:
  GpuContext(int ordinal, DeviceInfo info) : ordinal_(ordinal), info_(std::move(info)) {}
  int ordinal_;
  DeviceInfo info_;
  gpuStream_t alloc_stream_ = nullptr;
};

}  // namespace tessera::gpu
