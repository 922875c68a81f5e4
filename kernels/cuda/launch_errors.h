#pragma once
// The runtime error a launcher returns when it refuses its arguments (a
// shape or parameter the kernels do not serve), for kernels/cuda/*.cu. Not
// in gpu_runtime.h under a gpu* name because only the launchers need it.
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu::kernels {

#if defined(TESSERA_GPU_HIP)
inline constexpr gpuError_t kInvalidValue = hipErrorInvalidValue;
#else
inline constexpr gpuError_t kInvalidValue = cudaErrorInvalidValue;
#endif

}  // namespace tessera::gpu::kernels
