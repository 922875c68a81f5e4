// The plugin's one exported symbol (core/hal/abi.h): "cuda" or "rocm",
// whichever runtime this copy of the source was compiled against.
#include "backends/cuda/gpu_device.h"

namespace {

tessera::Backend* create_gpu_backend() { return new tessera::gpu::GpuBackend(); }

const tessera::BackendRegistration kRegistration = tessera::make_backend_registration(TESSERA_GPU_BACKEND, create_gpu_backend);

}  // namespace

extern "C" __attribute__((visibility("default"))) const tessera::BackendRegistration* tessera_backend_register(uint32_t) {
  return &kRegistration;  // whatever the host speaks: the host compares (core/hal/abi.h)
}
