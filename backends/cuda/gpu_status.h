#pragma once
// Every CUDA/HIP runtime error as a Status naming the call and the code.
#include <string>

#include "core/status.h"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

// "cudaErrorMemoryAllocation (2): out of memory" (the description only where
// it says more than the name: HIP's are often the name again).
inline std::string gpu_error_text(gpuError_t e) {
  const std::string name = gpuGetErrorName(e), text = gpuGetErrorString(e);
  return name + " (" + std::to_string((int)e) + ")" + (text == name ? "" : ": " + text);
}

// `call` as written in the source ("gpuMalloc(&p, n)"), named after the
// runtime's own function ("cudaMalloc(&p, n)", "hipMalloc(&p, n)").
inline std::string gpu_call_name(const char* call) {
  const std::string c = call;
  return c.rfind("gpu", 0) == 0 ? TESSERA_GPU_API + c.substr(3) : c;
}

inline Status gpu_failed(const char* call, gpuError_t e) {
  const std::string what = std::string(TESSERA_GPU_BACKEND ": ") + gpu_call_name(call) + " failed: " + gpu_error_text(e);
#if defined(TESSERA_GPU_HIP)
  const bool oom = e == hipErrorOutOfMemory;
#else
  const bool oom = e == cudaErrorMemoryAllocation;
#endif
  return oom ? resource_exhausted(what) : internal_error(what);
}

}  // namespace tessera::gpu

// `TS_GPU_TRY(gpuFoo(...))` returns a Status naming gpuFoo unless it succeeded.
#define TS_GPU_TRY(call)                                                      \
  do {                                                                        \
    const gpuError_t ts_gpu_err_ = (call);                                    \
    if (ts_gpu_err_ != gpuSuccess) return ::tessera::gpu::gpu_failed(#call, ts_gpu_err_); \
  } while (0)
