#pragma once
// The one compatibility header for the collectives library: NCCL on CUDA,
// RCCL on ROCm. RCCL keeps NCCL's API call for call (ncclAllReduce,
// ncclComm_t, ...), so the plugin's communicator (gpu_communicator.cpp) is
// one source; only the header and the library's file name differ.
//
// TESSERA_GPU_NCCL is set by CMake where the header and the library were
// found (cmake/gpu_backends.cmake); without it the plugin builds and its
// create_communicator says "built without NCCL" (or RCCL).
//
// The library is opened at run time (dlopen), not linked: the plugin needs
// only the GPU driver to load (backends/cuda/CMakeLists.txt), and a machine
// without NCCL still runs every single-device model; only a communicator
// needs it, and its creation names what was missing.
#include <string>

#include "core/status.h"
#include "kernels/cuda/gpu_runtime.h"

#if defined(TESSERA_GPU_HIP)
#define TESSERA_GPU_COLLECTIVES "rccl"
#define TESSERA_GPU_COLLECTIVES_LIBRARY "librccl.so.1"
#if defined(TESSERA_GPU_NCCL)
#include <rccl/rccl.h>
#endif
#else
#define TESSERA_GPU_COLLECTIVES "nccl"
#define TESSERA_GPU_COLLECTIVES_LIBRARY "libnccl.so.2"
#if defined(TESSERA_GPU_NCCL)
#include <nccl.h>
#endif
#endif

// A strided device copy (the rows of an all_gather's result), host code only.
#if defined(TESSERA_GPU_HIP)
#define gpuMemcpy2DAsync hipMemcpy2DAsync
#else
#define gpuMemcpy2DAsync cudaMemcpy2DAsync
#endif

namespace tessera::gpu {

#if defined(TESSERA_GPU_NCCL)
// The library's entry points this plugin calls, found by dlsym in the
// library the runtime loader finds (TESSERA_GPU_COLLECTIVES_LIBRARY), else
// in the one CMake found (TESSERA_NCCL_LIBRARY).
struct NcclApi {
  std::string library;  // the file opened
  int version = 0;      // ncclGetVersion's: 22809 for 2.28.9
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclGetLastError) get_last_error = nullptr;  // may be null (before NCCL 2.13)
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
};

// The library, opened once per process; an `unsupported` Status naming the
// files tried and the loader's reason when it cannot be.
Expected<const NcclApi*> nccl_api();

// "cuda: ncclAllReduce failed (NCCL 2.28.9): unhandled cuda error (run with
// NCCL_DEBUG=INFO for details); <ncclGetLastError's line>". `comm` may be null.
Status nccl_failed(const NcclApi& api, const char* call, ncclResult_t r, ncclComm_t comm);
#endif

// Whether this plugin was built with its collectives library.
constexpr bool built_with_collectives() {
#if defined(TESSERA_GPU_NCCL)
  return true;
#else
  return false;
#endif
}

// Why this build has no communicator: the line create_communicator and the
// kernel table give.
inline std::string built_without_collectives() {
#if defined(TESSERA_GPU_HIP)
  return "this " TESSERA_GPU_BACKEND " plugin was built without RCCL (rccl/rccl.h or librccl was not found at configure)";
#else
  return "this " TESSERA_GPU_BACKEND " plugin was built without NCCL (nccl.h or libnccl was not found at configure)";
#endif
}

}  // namespace tessera::gpu
