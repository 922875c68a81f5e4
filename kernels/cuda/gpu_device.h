#pragma once
// The device side of kernels/cuda/gpu_runtime.h, for the .cu files only
// (nvcc, or hipcc with -x hip): the language runtime and what differs in it.
#if defined(TESSERA_GPU_HIP)
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif
#include "kernels/cuda/gpu_runtime.h"
