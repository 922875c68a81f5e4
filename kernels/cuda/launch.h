#pragma once
// The launchers of kernels/cuda/*.cu: plain functions the host code calls
// (compiled by the C++ compiler, which never sees a kernel), each queueing
// its kernel on a stream and returning the runtime's error.
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu::kernels {

// Whether this build's code runs on the current device: the runtime answers
// with an error (no kernel image for the device) where it has none.
gpuError_t check_kernel_image();

}  // namespace tessera::gpu::kernels
